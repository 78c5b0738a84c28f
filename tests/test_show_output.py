"""`apiprof show` prints texts that come from profiled packages without letting them drive
the terminal (escape sequences in exception messages, tracebacks and inputs)."""

from __future__ import annotations

import pytest

from apiprof.cli.show import print_failure, print_inputs


def test_a_failure_with_escape_sequences_is_printed_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    failure = {
        "scenario_id": "synth-1",
        "phase": "call",
        "kind": "raised",
        "reason": "ValueError: \x1b[2Jcleared",
        "location": "pkg/mod.py:3",
        "traceback": 'File "pkg/mod.py", line 3\n  raise ValueError("\x1b]0;title\x07")',
    }
    print_failure(failure, args_traceback=True)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "raised [synth-1, call]: ValueError: \\x1b[2Jcleared" in out
    assert "at pkg/mod.py:3" in out
    assert '| File "pkg/mod.py", line 3' in out and "\\x07" in out


def test_inputs_are_printed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    print_inputs({"inputs": "s='\x1b[31m'", "source": "synthesised"})
    assert capsys.readouterr().out == "      inputs: s='\\x1b[31m'\n"
