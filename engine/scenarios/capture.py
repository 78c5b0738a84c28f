"""Argument capture: the arguments public entry points really receive — while the package's
docstring examples or its own test suite run — recorded and replayed as ordinary scenarios.

A profile hook (``sys.setprofile``; only while capturing, inside a sandboxed worker) watches the
code objects of the package's Python entry points. On entry it pickles the call's arguments at
once (a later mutation must not change what was seen), keeping a few distinct calls per entry
point; past a few kept calls an entry point's code is no longer watched, so capture costs a
long suite little. Captures are replayed in isolation
(:mod:`~apiprof.engine.scenarios.replayed`). Arguments that cannot be copied (open files,
generators, locks) are not replayed; the report names the example or test that passed them.
Paths into the capturing worker's temporary folder travel with their content
(:mod:`~apiprof.engine.scenarios.temppaths`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import inspect
import operator
import pickle
import sys
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiprof.engine.discovery.discover import (
    Discovery,
    describe_exception,
    measurable,
    resolve_object,
)
from apiprof.engine.scenarios import temppaths
from apiprof.engine.scenarios.doctests import docstring_scenarios, identity_of
from apiprof.engine.scenarios.shown import shown_arguments
from apiprof.engine.scenarios.trial import try_scenario

MAX_CALLS = 3
"""Distinct argument sets kept per entry point."""

MAX_TRIES = 50
"""Calls of one entry point looked at before capture stops watching it (most repeat a kept one)."""

MAX_ORIGINS = 3
"""Examples or tests remembered per entry point as reaching it first (a long ``--tests``
suite's profiled runs run only the cheapest of them: any test that calls an entry point gives
a measurement, and the first one to reach it may be the slowest of its class)."""

MAX_PAYLOAD = 256 * 1024
"""Pickled arguments larger than this are not kept (a replay should not need megabytes)."""
MAX_UNCOPYABLE = 64
"""Receivers remembered as uncopyable during one capture (each is kept alive until it ends)."""


@dataclass(frozen=True)
class CapturedCall:
    """One call of an entry point as it happened: pickled arguments and where they came from."""

    qualname: str
    payload: str  # base64 of pickle.dumps((args, kwargs)); "" when they could not be copied
    origin: str  # "doc:pkg.f#1" (a docstring example) or "tests:path::test_name"
    shown: str = ""  # the arguments as a person reads them (reprs, shortened)
    problem: str = ""  # why the arguments could not be copied
    driver: str = ""  # the scenario whose run passed them (self-driven capture), else ""


Location = tuple[str, str]
"""Where code lives, the same for every copy of a package: (path from the package's top
directory, e.g. ``dateutil/parser/_parser.py``; the code's qualified name)."""


@dataclass
class Recorder:
    """The profile hook: records calls of the watched code, found by :data:`Location` so the
    installed copy, a source tree and an editable install all match."""

    watched: dict[Location, list[tuple[str, str]]]  # location -> [(qualname, how)]
    tops: frozenset[str] = frozenset()  # top-level package names the locations are under
    origin: str = ""
    arguments: bool = True  # False: only which origins reached each entry point
    calls: dict[str, list[CapturedCall]] = field(default_factory=dict)
    seen: set[tuple[str, str]] = field(default_factory=set)
    # the first origins (tests, examples) that reached each entry point
    reached: dict[str, list[str]] = field(default_factory=dict)
    tries: Counter[str] = field(default_factory=Counter)  # calls looked at, per entry point
    fresh: list[CapturedCall] = field(default_factory=list)  # kept since the last take_fresh()
    _known: dict[types.CodeType, list[tuple[str, str]]] = field(default_factory=dict)
    # receivers that cannot be copied, held (so their ids stay theirs) to skip at once: a
    # walker's handlers are all called on one receiver, which a copy attempt per call would
    # pickle whole each time
    _uncopyable: dict[int, tuple[object, str]] = field(default_factory=dict)  # (it, why)

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> None:
        """The ``sys.setprofile`` hook (Python 3.11)."""
        if event == "call":
            self.seen_start(_frame_code(frame), frame)

    def targets(self, code: types.CodeType) -> list[tuple[str, str]]:
        found = self._known.get(code)
        if found is None:
            found = self._known[code] = self.watched.get(location_of(code, self.tops), [])
        return found

    def seen_start(self, code: types.CodeType, frame: types.FrameType) -> bool:
        """Record the call starting in ``frame``; False when ``code`` needs no more watching
        (not an entry point, or its calls and the origins reaching it are all kept)."""
        targets = self.targets(code)
        if targets and _called_by_apiprof(frame):
            return True  # apiprof's own use (the worker encoding a message), not the package's
        for qualname, how in targets:
            origins = self.reached.setdefault(qualname, [])
            arguments = self.wants_arguments(qualname)
            if not arguments and (len(origins) >= MAX_ORIGINS or self.origin in origins):
                continue  # nothing to keep: the cheap path of a call repeated inside one test
            args, kwargs = _arguments(frame)
            kind, _, name = how.partition(":")
            if kind in ("init", "new"):  # a constructor: the class is called anew on replay
                made = (args[0] if kind == "new" else type(args[0])) if args else None
                if getattr(made, "__qualname__", None) != name:  # another class's construction
                    continue
                args = args[1:]
            elif how == "classmethod":
                args = args[1:]
            if len(origins) < MAX_ORIGINS and self.origin not in origins:
                origins.append(self.origin)
            if arguments:
                self.tries[qualname] += 1
                self.record(qualname, args, kwargs)
        return any(
            len(self.reached[qualname]) < MAX_ORIGINS or self.wants_arguments(qualname)
            for qualname, _ in targets
        )

    def watched_names(self) -> set[str]:
        return {qualname for targets in self.watched.values() for qualname, _ in targets}

    def wants_arguments(self, qualname: str) -> bool:
        """Whether calls of ``qualname`` are still worth copying: fewer than :data:`MAX_CALLS`
        kept, and not yet :data:`MAX_TRIES` looked at (arguments that never copy cost every time)."""
        if not self.arguments or self.tries[qualname] >= MAX_TRIES:
            return False
        kept = self.calls.setdefault(qualname, [])
        return len([c for c in kept if c.payload]) < MAX_CALLS

    def record(self, qualname: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            if args and id(args[0]) in self._uncopyable:
                raise pickle.PicklingError(self._uncopyable[id(args[0])][1])
            data = temppaths.dumps(args, kwargs)
        except Exception as error:
            if args and id(args[0]) not in self._uncopyable:
                self._note_uncopyable(args[0], error)
            if not any(c.problem for c in self.calls[qualname]):
                problem = describe_exception(error)[:200]
                shown = shown_arguments(args, kwargs)
                self._keep(CapturedCall(qualname, "", self.origin, shown, problem))
            return
        shown = shown_arguments(args, kwargs)
        if len(data) > MAX_PAYLOAD:
            return
        key = (qualname, hashlib.sha1(data).hexdigest())
        if key in self.seen:
            return
        self.seen.add(key)
        payload = base64.b64encode(data).decode("ascii")
        self._keep(CapturedCall(qualname, payload, self.origin, shown))

    def _keep(self, call: CapturedCall) -> None:
        self.calls.setdefault(call.qualname, []).append(call)
        self.fresh.append(call)

    def take_fresh(self) -> list[CapturedCall]:
        """The calls kept since the last call of this: what a long run sends on while it goes,
        so that a worker stopped before the end still hands over what it saw."""
        taken, self.fresh = self.fresh, []
        return taken

    def _note_uncopyable(self, receiver: object, error: BaseException) -> None:
        """Remember ``receiver`` when it is what cannot be copied (it alone fails too)."""
        if len(self._uncopyable) >= MAX_UNCOPYABLE:
            return
        try:
            temppaths.dumps((receiver,), {})
        except Exception:
            self._uncopyable[id(receiver)] = (receiver, describe_exception(error)[:200])

    def results(self) -> list[CapturedCall]:
        return [call for calls in self.calls.values() for call in calls]


_frame_code: Callable[[types.FrameType], types.CodeType] = operator.attrgetter("f_code")


def read_frames_with(reader: Callable[[types.FrameType], types.CodeType]) -> None:
    """How the 3.11 hook reads a frame's code: ``frame.f_code`` raises an audit event, which in
    a worker runs the sandbox's guard on every call, so the sandbox installs an unaudited
    reader (:mod:`~apiprof.engine.measure.framecode`) with its guard."""
    global _frame_code
    _frame_code = reader


def _called_by_apiprof(frame: types.FrameType) -> bool:
    """Whether the caller is one of apiprof's own modules: the worker sends its messages with
    ``json.dumps`` while an example runs, and that call is not the package's."""
    caller = frame.f_back
    name = caller.f_globals.get("__name__", "") if caller is not None else ""
    return isinstance(name, str) and name.startswith("apiprof.")


def _arguments(frame: types.FrameType) -> tuple[tuple[Any, ...], dict[str, Any]]:
    code = frame.f_code
    names = code.co_varnames
    positional = code.co_argcount
    keyword_only = code.co_kwonlyargcount
    local = frame.f_locals
    args = [local[name] for name in names[:positional] if name in local]
    kwargs = {
        name: local[name] for name in names[positional : positional + keyword_only] if name in local
    }
    index = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        args.extend(local.get(names[index], ()))
        index += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        kwargs.update(local.get(names[index], {}))
    return tuple(args), kwargs


def location_of(code: types.CodeType, tops: frozenset[str]) -> Location:
    """The :data:`Location` of a code object (``("", "")`` outside the packages ``tops``); a
    top-level name is a package's folder or, for a single-module distribution (six), its file."""
    parts = code.co_filename.replace("\\", "/").split("/")
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in tops:
            return "/".join(parts[index:]), code.co_qualname
    if parts[-1].endswith(".py") and parts[-1].removesuffix(".py") in tops:
        return parts[-1], code.co_qualname
    return "", ""


def watch_list(qualnames: Sequence[str]) -> dict[Location, list[tuple[str, str]]]:
    """Where the code of each entry point that can be captured lives, and how it is called."""
    watched: dict[Location, list[tuple[str, str]]] = {}
    tops = frozenset(qualname.split(".")[0] for qualname in qualnames)
    for qualname in qualnames:
        try:
            obj = resolve_object(qualname)
        except Exception:
            continue
        owner_name = qualname.rpartition(".")[0]
        raw: object = obj
        how = "function"
        if inspect.isclass(obj):  # its own or an inherited __init__, else its __new__
            init = getattr(obj, "__init__", None)
            if isinstance(init, types.FunctionType):
                raw, how = init, f"init:{obj.__qualname__}"
            else:
                raw, how = getattr(obj, "__new__", None), f"new:{obj.__qualname__}"
        else:
            try:
                owner = resolve_object(owner_name)
            except Exception:
                owner = None
            if inspect.isclass(owner):
                static = inspect.getattr_static(owner, qualname.rpartition(".")[2], None)
                if isinstance(static, classmethod):
                    raw, how = static.__func__, "classmethod"
                elif isinstance(static, staticmethod):
                    raw = static.__func__
                elif isinstance(static, property):
                    raw = static.fget
                else:
                    raw = measurable(static if static is not None else obj)
        code = getattr(inspect.unwrap(raw), "__code__", None) if callable(raw) else None
        if isinstance(code, types.CodeType):
            location = location_of(code, tops)
            if location[0]:
                watched.setdefault(location, []).append((qualname, how))
    return watched


def recorder_for(qualnames: Sequence[str], *, arguments: bool = True) -> Recorder:
    """A recorder watching these entry points (imports their package to find the code); without
    ``arguments`` it only notes which origins reach them."""
    tops = frozenset(q.split(".")[0] for q in qualnames)
    return Recorder(watch_list(qualnames), tops, arguments=arguments)


@contextlib.contextmanager
def capturing(recorder: Recorder) -> Iterator[Recorder]:
    """Record calls while the block runs. With ``sys.monitoring`` (3.12+) every code object
    that is not a watched entry point is switched off after its first start, so the code
    around runs at nearly full speed; on 3.11 a ``sys.setprofile`` hook sees every call."""
    monitoring = getattr(sys, "monitoring", None)
    tool = _free_tool(monitoring) if monitoring is not None else None
    if monitoring is None or tool is None:
        previous = sys.getprofile()
        sys.setprofile(recorder)
        try:
            yield recorder
        finally:
            sys.setprofile(previous)
        return
    busy = [False]

    def on_start(code: types.CodeType, offset: int) -> object:
        if busy[0]:
            return None
        busy[0] = True
        try:
            wanted = recorder.seen_start(code, sys._getframe(1))
        finally:
            busy[0] = False
        return None if wanted else monitoring.DISABLE

    monitoring.register_callback(tool, monitoring.events.PY_START, on_start)
    monitoring.set_events(tool, monitoring.events.PY_START)
    try:
        yield recorder
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, monitoring.events.PY_START, None)
        monitoring.free_tool_id(tool)
        monitoring.restart_events()  # what DISABLE switched off counts again for other tools


def _free_tool(monitoring: Any) -> int | None:
    for tool in (4, 3, 5, 1, 0, 2):
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "apiprof-capture")
            return tool
    return None


# -- capturing from docstring examples ------------------------------------------------------------

EXAMPLES_BUDGET = 90.0
"""Seconds all docstring examples of a package may take together while capturing."""


def capture_examples(
    discovery: Discovery, *, budget: float = EXAMPLES_BUDGET
) -> list[CapturedCall]:
    """Run every docstring example of the package (as docstring scenarios run: each block once,
    quietly, with the trial time limit) and record the arguments its entry points receive."""
    recorder = recorder_for([entry.qualname for entry in discovery.entry_points])
    if not recorder.watched:
        return []
    objects = {}
    for entry in discovery.entry_points:
        with contextlib.suppress(Exception):
            objects[entry.qualname] = resolve_object(entry.qualname)
    public = {id(identity_of(obj)): qualname for qualname, obj in objects.items()}
    deadline = time.monotonic() + budget
    for entry in discovery.entry_points:
        if entry.qualname not in objects:
            continue
        specs, _ = docstring_scenarios(entry, objects[entry.qualname], public)
        for spec in specs:
            if time.monotonic() > deadline:
                return recorder.results()
            recorder.origin = spec.id
            with capturing(recorder):
                try_scenario(spec, calls=1)
    return recorder.results()
