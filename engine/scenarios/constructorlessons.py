"""Lessons from a receiver that could not be built: its constructor's own error, read for
what one of the constructor's parameters wants.

A method is called on an instance; when building that instance already fails
(``BaseReport(options)`` asks ``options.benchmark_keys`` of the dict the name ``options``
suggested), no call of the method is ever made, so no error of the method can teach anything.
The constructor's error can: its frame holds what each parameter was given, so the same rules
(:func:`.lessons.learn`) name the parameter and what it wants. The lesson is named
``self.<parameter>``, which is how synthesis applies it to the receiver's constructor.
"""

from __future__ import annotations

import types
import typing
from dataclasses import replace
from typing import Any

from apiprof.engine.discovery.discover import describe_exception
from apiprof.engine.scenarios.callees import usage_through_callees
from apiprof.engine.scenarios.lessons import learn, may_teach
from apiprof.engine.scenarios.wants import Lesson, Want


def constructor_error(error: BaseException) -> BaseException | None:
    """The exception a receiver's (or argument's) constructor raised, when ``error`` is a
    failure to build one from it and the constructor is Python code; else None."""
    cause = error.__cause__
    while cause is not None and _constructor_frame(cause) is None:
        cause = cause.__cause__  # a failure to build, from a failure to build, from the error
    if cause is None:
        return None
    return cause if may_teach(f"raised {describe_exception(cause)}") else None


def constructor_lesson(error: BaseException) -> Lesson | None:
    """What the constructor that raised ``error`` wants of one of its parameters, named
    ``self.<parameter>``; None when its error says nothing the rules understand."""
    cause = constructor_error(error)
    frame = _constructor_frame(cause) if cause is not None else None
    if cause is None or frame is None:
        return None
    code = frame.f_code
    names = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]
    bound = {name: frame.f_locals[name] for name in names if name in frame.f_locals}
    lesson = learn(cause, bound)
    if lesson is None or lesson.parameter not in bound:
        return None
    if lesson.want is Want.ATTRIBUTES and not lesson.element:
        lesson = replace(lesson, names=_all_read(lesson, type(frame.f_locals.get("self"))))
    return replace(lesson, parameter=f"self.{lesson.parameter}")


def _all_read(lesson: Lesson, cls: type) -> tuple[str, ...]:
    """The attributes asked for, and every other attribute the constructor (and the callees
    it hands the parameter to) reads off it: ``options.format``, ``options.repeat``... are
    learned in one round instead of one failed call each."""
    usage = usage_through_callees(typing.cast(Any, cls).__init__, lesson.parameter)
    asked = {name.removesuffix("()") for name in lesson.names}
    more = sorted(usage.attributes - asked) if usage is not None else []
    return (*lesson.names, *more)


def _constructor_frame(error: BaseException) -> types.FrameType | None:
    """The outermost ``__init__`` frame of ``error``'s traceback: the constructor called."""
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "__init__" and code.co_varnames[:1] == ("self",):
            return tb.tb_frame
        tb = tb.tb_next
    return None
