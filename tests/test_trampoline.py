"""3.11's trampolines hand a call on as a caller makes it (engine/measure/trampoline.py).

What the interval of a trampolined call holds beyond the function itself must be what the
empty reference function's interval holds, wherever the call is made. A ``*args, **kwargs``
pass-through calls the clone with ``CALL_FUNCTION_EX`` (on 3.11 a nested interpreter loop,
~120 ns, slower between a scenario's calls than in the reference's tight loop: a 160 ns leaf
read 1.08–1.19× its truth). These checks are deterministic: the bytecode of the call made
inside the interval, and that behaviour stays the original's for every kind of parameter.
"""

from __future__ import annotations

import dis
import types

import pytest

from apiprof.engine.measure.probes import Record
from apiprof.engine.measure.trampoline import install_trampoline, positional_code, set_code


def _plain(a, b=2):
    return (a, b)


def _posonly(a, /, b, c=3):
    return (a, b, c)


def _kwonly(a, *, b, c=4):
    return (a, b, c)


def _variable(a, *rest, b=5, **named):
    named["seen"] = True  # the function's own dict: the caller's is not touched
    return (a, rest, b, sorted(named))


def _no_parameters():
    return "none"


def _closure():
    scale = 3

    def scaled(x, y=2, *, z=1):
        return (x + y + z) * scale

    return scaled


def _captured_parameter(a, b=1):
    inner = lambda: a + b  # noqa: E731 - a parameter that is also a cell
    return inner()


CASES = [
    (_plain, [((1,), {}), ((1, 7), {}), ((), {"a": 1, "b": 9})]),
    (_posonly, [((1, 2), {}), ((1,), {"b": 5}), ((1, 2, 6), {})]),
    (_kwonly, [((1,), {"b": 2}), ((1,), {"b": 2, "c": 8})]),
    (_variable, [((1,), {}), ((1, 2, 3), {"b": 0, "x": 1}), ((), {"a": 4, "y": 2})]),
    (_no_parameters, [((), {})]),
    (_closure(), [((1,), {}), ((1, 0), {"z": 5})]),
    (_captured_parameter, [((1,), {}), ((2, 3), {})]),
]


BAD_CALL = (tuple(range(9)), {"unknown": 1})  # binds only where the signature takes anything


def _outcome(function, args, kwargs) -> object:
    try:
        return function(*args, **kwargs)
    except TypeError:
        return TypeError


def _interval_call(function: types.FunctionType) -> list[str]:
    """The opcodes of the call the trampoline makes between its two clock reads."""
    return [
        ins.opname
        for ins in dis.get_instructions(function.__code__)
        if ins.opname.startswith("CALL") and ins.opname != "CALL_INTRINSIC_1"
    ]


@pytest.mark.parametrize("function, calls", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_the_clone_is_called_as_a_caller_calls_it(function, calls):
    """No CALL_FUNCTION_EX (a nested interpreter loop on 3.11) anywhere in the trampoline, for
    positional, positional-only, keyword-only and variable parameters alike; results, errors
    and records are the original's, and the original code comes back."""
    expected = [_outcome(function, args, kwargs) for args, kwargs in [*calls, BAD_CALL]]
    original = function.__code__
    enters, exits = Record(), Record()
    install_trampoline(function, enters, exits, lambda: 1, lambda: 2)
    try:
        assert "CALL_FUNCTION_EX" not in _interval_call(function)
        got = [_outcome(function, args, kwargs) for args, kwargs in [*calls, BAD_CALL]]
    finally:
        set_code(function, original)
    assert got == expected
    entered = len(calls) + (expected[-1] is not TypeError)  # a call that fails to bind: none
    assert len(enters) == len(exits) == 2 * entered
    assert function.__code__ is original


def test_a_parameter_named_like_the_trampolines_own_locals_still_works():
    """The one case that falls back to a ``*args, **kwargs`` pass-through."""
    namespace: dict[str, object] = {}
    exec("def odd(_apiprof_r, b=1):\n    return _apiprof_r + b\n", namespace)
    function = namespace["odd"]
    assert isinstance(function, types.FunctionType)
    original = function.__code__
    enters, exits = Record(), Record()
    install_trampoline(function, enters, exits, lambda: 1, lambda: 2)
    try:
        assert function(1) == 2 and function(_apiprof_r=2, b=3) == 5
    finally:
        set_code(function, original)
    assert len(enters) == 4


def test_the_positional_clone_code_is_kept_for_the_next_pass():
    """A keyword-only or variable signature is called through a positional copy of its code,
    made once per code object: the interpreter's specialisation of it carries over."""
    code = _variable.__code__
    flat = positional_code(code)
    assert positional_code(code) is flat
    assert flat.co_argcount == 4 and flat.co_kwonlyargcount == 0
    assert flat.co_code == code.co_code  # the same body
