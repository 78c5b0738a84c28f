"""Profile hooks read a frame's code without the audit event ``frame.f_code`` raises
(engine/measure/framecode): in a worker every such event runs the sandbox's audit hook.

Audit hooks cannot be removed, so each check runs in a fresh interpreter that counts the
``object.__getattr__`` events naming ``f_code`` while a pass runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

from apiprof.engine.measure import framecode

COUNTING = """
import sys
reads = []
sys.addaudithook(
    lambda event, args: reads.append(1)
    if event == "object.__getattr__" and args[1:] == ("f_code",) else None
)

def leaf(x):
    return x + 1

def parent():
    return sum(leaf(i) for i in range(50))
"""


def audited_reads(body: str) -> int:
    """``f_code`` reads the audit hook saw while ``body`` ran (after COUNTING's set-up)."""
    code = COUNTING + textwrap.dedent(body) + "\nprint(len(reads))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_code_of_is_the_frames_code():
    frame = sys._getframe()
    assert framecode.code_of(frame) is test_code_of_is_the_frames_code.__code__
    assert framecode._f_code(frame) is framecode.code_of(frame)


def test_code_of_refuses_what_is_not_a_frame():
    if framecode.code_of is framecode._f_code:
        pytest.skip("built without the C extension")
    with pytest.raises(TypeError, match="expects a frame"):
        framecode.code_of(types.SimpleNamespace())  # type: ignore[arg-type]


def test_the_counting_interpreter_sees_an_audited_read():
    assert audited_reads("sys._getframe().f_code\n") == 1


def test_the_profile_hook_timing_pass_raises_no_audit_event():
    """The sys.setprofile timing probe (3.11's for generators and C-level targets; forced
    here on every version) sees every call and return of the scenario."""
    if framecode.code_of is framecode._f_code:
        pytest.skip("built without the C extension")
    reads = audited_reads(
        """
        from apiprof.engine.measure.probes import resolve_site
        from apiprof.engine.measure.timing import run_timing_pass
        log = run_timing_pass(parent, [resolve_site(parent)], repeat=5, mechanism="setprofile")
        assert log.runs == 5
        """
    )
    assert reads == 0


def test_the_allocation_pass_raises_no_audit_event():
    """3.11's allocation pass is a sys.setprofile hook (3.12+ monitoring hands it the code)."""
    if framecode.code_of is framecode._f_code:
        pytest.skip("built without the C extension")
    reads = audited_reads(
        """
        from apiprof.engine.measure.alloc import run_allocation_pass
        from apiprof.engine.measure.probes import resolve_site
        result = run_allocation_pass(parent, [resolve_site(parent), resolve_site(leaf)], repeat=3)
        assert result.calls[resolve_site(leaf).key] > 0
        """
    )
    assert reads == 0
