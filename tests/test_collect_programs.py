"""Collection end to end: programs run with the installed start-up hook (a subprocess each), and the
``apiprof collect`` commands."""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest
from collecthelp import (
    BUSY_PROGRAM,
    WAIT_FOR_COLLECTOR,
    collect_env,
    counts,
    make_reference,
    run_program,
    spooled_docs,
)

from apiprof.cli import main
from apiprof.engine.collect.paths import Layout
from apiprof.engine.collect.slots import acquire_slot
from apiprof.engine.collect.wire import parse_batch
from apiprof.model.records import Metric

# -- collected programs (subprocesses through the installed hook) --------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return make_reference(tmp_path_factory.mktemp("ref") / "reference.db")


def test_a_collected_program_leaves_one_whole_batch(tmp_path, reference):
    result = run_program(
        BUSY_PROGRAM, collect_env(tmp_path / "home", reference), tmp_path, "0.8", "wait"
    )
    assert result.returncode == 0 and result.stderr == ""
    out = json.loads(result.stdout)
    assert out["collector"] is True
    files = list((tmp_path / "home" / "spool").glob("*.json"))
    assert len(files) == 1
    batch = parse_batch(files[0].read_bytes())
    measured = {api.qualname: api for api in batch.apis}
    assert set(measured) == {"json.dumps", "textwrap.dedent"}
    dumps = measured["json.dumps"]
    assert (dumps.module, dumps.kind, dumps.version) == ("json", "function", "2.0.9")
    assert 0 < dumps.histograms[Metric.WALL].count <= out["calls"]
    assert dumps.histograms[Metric.CPU].count <= dumps.histograms[Metric.WALL].count
    assert batch.machine_speed_ns is None or batch.machine_speed_ns > 0


def test_long_programs_write_summaries_periodically_and_a_crash_tears_none(tmp_path, reference):
    source = BUSY_PROGRAM.replace(
        'print(json.dumps({"calls"', 'import os; os._exit(0)\nprint(json.dumps({"calls"'
    )
    result = run_program(
        source,
        collect_env(tmp_path / "home", reference, collect_interval=0.15),
        tmp_path,
        "1.5",
        "wait",
    )
    assert result.returncode == 0
    docs = spooled_docs(tmp_path / "home")  # every file parses: no torn batch
    assert len(docs) >= 2  # periodic summaries; the one due at exit was lost with the crash
    assert len({d["batch_id"] for d in docs}) == len(docs)
    for path in (tmp_path / "home" / "spool").glob("*.json"):
        parse_batch(path.read_bytes())


def test_the_host_program_runs_unharmed_when_the_spool_cannot_be_written(tmp_path, reference):
    home = tmp_path / "home"
    home.mkdir()
    (home / "spool").write_text("a file where the spool directory should be")
    quiet = run_program(
        BUSY_PROGRAM, {**collect_env(home, reference), "APIPROF_COLLECT": "0"}, tmp_path, "0.3"
    )
    result = run_program(BUSY_PROGRAM, collect_env(home, reference), tmp_path, "0.3")
    assert result.returncode == quiet.returncode == 0
    assert result.stderr == quiet.stderr == ""
    assert json.loads(result.stdout).keys() == json.loads(quiet.stdout).keys()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_collects_its_own_calls_only(tmp_path, reference):
    source = WAIT_FOR_COLLECTOR + textwrap.dedent(
        """
        import os
        waited = wait_for_collector()
        def work(seconds):
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                json.dumps([n]); leave_a_cycle(); n += 1
                if n % 100 == 0:
                    time.sleep(0.001)
            return n
        before = work(0.4)
        pid = os.fork()
        if pid == 0:
            print("child", work(0.4), flush=True)
            sys.exit(0)
        os.waitpid(pid, 0)
        print("parent", waited + before + work(0.2), flush=True)
        """
    )
    result = run_program(source, collect_env(tmp_path / "home", reference), tmp_path)
    assert result.returncode == 0 and result.stderr == ""  # no warning about forking with threads
    calls = dict(line.split() for line in result.stdout.splitlines())
    docs = spooled_docs(tmp_path / "home")
    assert len(docs) == 2
    measured = sorted(counts([d])["json.dumps"] for d in docs)
    assert measured[0] > 0 and measured[1] <= int(calls["parent"])
    assert min(measured) <= int(calls["child"])


def test_no_slot_no_collection(tmp_path, reference):
    layout = Layout(tmp_path / "home")
    held = acquire_slot(layout, 1)
    try:
        env = collect_env(layout.root, reference, collect_max_programs=1)
        result = run_program(BUSY_PROGRAM, env, tmp_path, "0.4")
    finally:
        held.release()
    assert result.returncode == 0
    assert spooled_docs(layout.root) == []


@pytest.mark.slow
def test_the_budget_keeps_probed_calls_to_a_small_share(tmp_path, reference):
    env = collect_env(tmp_path / "home", reference)
    env["APIPROF_COLLECT_BUDGET"] = "0.1"
    program = BUSY_PROGRAM.replace(
        "while time.perf_counter() < end:",
        "while time.process_time() < seconds:  # 4 s of work, however busy the machine",
    )
    result = run_program(program, env, tmp_path, "4", timeout=600)
    assert result.returncode == 0
    calls = json.loads(result.stdout)["calls"]
    measured = counts(spooled_docs(tmp_path / "home"))
    cost = json.loads((tmp_path / "home" / "state" / "last-program.json").read_text())
    # the collector starts once the program has worked long enough to pay for its start-up
    # within the budget, then switches its probes off whenever they pass it: probing every call
    # of these few-µs functions would cost this program about a third of its time
    assert 0 < sum(measured.values()) < 0.5 * 2 * calls
    # its own accounting: within the budget, give or take the window before a pause, which a
    # loaded machine stretches (one run at load 6 read 0.129 of a 0.1 budget)
    assert cost["share"] <= 0.1 * 1.5


# -- the command line ----------------------------------------------------------------------------


def test_collect_commands_enable_report_disable_and_purge(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("APIPROF_HOME", str(tmp_path))
    for name in list(os.environ):
        if name.startswith("APIPROF_COLLECT"):
            monkeypatch.delenv(name)
    assert (
        main(
            [
                "collect",
                "enable",
                "--rate",
                "0.5",
                "--server",
                "http://127.0.0.1:1",
                "--token",
                "t0k",
            ]
        )
        == 0
    )
    assert (tmp_path / "collect-enabled").exists()
    assert stat.S_IMODE((tmp_path / "collect.json").stat().st_mode) == 0o600
    capsys.readouterr()
    assert main(["collect", "status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["enabled"] and status["active"] and status["config"]["rate"] == 0.5
    assert status["config"]["token"] == "***" and status["machine_speed_ns"] > 0
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "x.json").write_text("{}")
    assert main(["collect", "purge"]) == 0
    assert not (tmp_path / "spool" / "x.json").exists()
    assert main(["collect", "disable"]) == 0
    assert "off for new programs" in capsys.readouterr().out
    assert main(["collect", "enable", "--rate", "2"]) == 2
    assert "rate" in capsys.readouterr().err
