"""I/O bytes per call: exact against functions that move known byte counts, hidden where zero."""

from __future__ import annotations

import os
import sys

import groundtruth_pkg as gt
import pytest

from apiprof.db.schema import open_db
from apiprof.db.store import add_histograms
from apiprof.engine.measure import alloc, iocount
from apiprof.engine.measure.calibrate import calibrate
from apiprof.engine.measure.profiler import Target, profile
from apiprof.format import worth_showing
from apiprof.lsp_server.config import ServerConfig
from apiprof.lsp_server.profiles import load_profiles
from apiprof.lsp_server.render import Markup, full_profile
from apiprof.model.histogram import Histogram
from apiprof.model.records import Metric

pytestmark = pytest.mark.skipif(
    iocount.open_io_counter() is None, reason="no per-thread I/O counters (not Linux)"
)

NAMES = ("copy_file", "read_file", "write_file", "leaf")


@pytest.fixture(scope="module")
def io_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("io")
    source, target = folder / "source.bin", folder / "target.bin"
    source.write_bytes(b"y" * gt.IO_BYTES)

    def run_once():
        gt.copy_file(str(source), str(target))
        gt.leaf()

    targets = [Target(f"gt.{name}", getattr(gt, name)) for name in NAMES]
    report = profile(run_once, targets, scenario_id="gt:io", repeat=5)
    return {(m.qualname, m.metric): m.histogram for m in report.measurements}


def test_the_counter_does_not_count_its_own_reads():
    counter = iocount.open_io_counter()
    try:
        readings = [counter.read() for _ in range(50)]
    finally:
        counter.close()
    assert len(set(readings)) == 1  # nothing else ran on this thread; our ~100-byte reads excluded


def test_bytes_read_and_written_are_exact_per_call(io_report):
    def only(qualname, metric):
        hist = io_report[(qualname, metric)]
        assert hist.count == 5, (qualname, metric)
        return set(hist.counts()), hist.total / hist.count

    n = gt.IO_BYTES
    assert only("gt.write_file", Metric.IO_WRITE)[1] == n
    assert only("gt.write_file", Metric.IO_READ)[1] == 0
    assert only("gt.read_file", Metric.IO_READ)[1] == n
    assert only("gt.read_file", Metric.IO_WRITE)[1] == 0
    # inclusive: the caller's figures are its callees' bytes, with none of the nested counter reads
    assert only("gt.copy_file", Metric.IO_READ)[1] == n
    assert only("gt.copy_file", Metric.IO_WRITE)[1] == n
    assert only("gt.leaf", Metric.IO_READ) == ({-1}, 0)  # the zero bucket
    assert only("gt.leaf", Metric.IO_WRITE) == ({-1}, 0)


def test_without_a_counter_no_io_metrics_are_recorded(monkeypatch, tmp_path):
    monkeypatch.setattr(iocount, "PROC_FILE", str(tmp_path / "missing"))
    assert iocount.open_io_counter() is None and iocount.io_mechanism() == ""
    result = alloc.run_allocation_pass(gt.leaf, [gt.leaf.__code__], repeat=2)
    assert result.calls[gt.leaf.__code__] == 2 and not result.io_read and not result.io_write


def test_calibration_names_the_io_mechanism():
    assert calibrate().io_mechanism == iocount.MECHANISM


def test_io_rows_are_shown_only_where_bytes_moved(io_report, tmp_path):
    assert not worth_showing(Metric.IO_READ, io_report[("gt.leaf", Metric.IO_READ)])
    assert worth_showing(Metric.IO_READ, io_report[("gt.read_file", Metric.IO_READ)])
    assert worth_showing(Metric.ALLOC_INCL, Histogram.of([0, 0]))  # zero allocation is still news
    db = open_db(tmp_path / "io.db")
    try:
        for name in ("gt.read_file", "gt.leaf"):
            add_histograms(db, name, {m: h for (q, m), h in io_report.items() if q == name})
        profiles = load_profiles(db, ["gt.read_file", "gt.leaf"])
        reader = full_profile(profiles["gt.read_file"], ServerConfig(), Markup(False))
        assert f"I/O read {gt.IO_BYTES / 1024:.1f} KiB" in reader and "I/O written" not in reader
        assert "I/O" not in full_profile(profiles["gt.leaf"], ServerConfig(), Markup(False))
    finally:
        db.conn.close()


def test_show_prints_io_only_for_the_api_that_does_it(io_report, tmp_path):
    import subprocess

    path = tmp_path / "io.db"
    db = open_db(path)
    try:
        for name in ("gt.write_file", "gt.leaf"):
            add_histograms(db, name, {m: h for (q, m), h in io_report.items() if q == name})
    finally:
        db.conn.close()

    def show(name):
        return subprocess.run(
            [sys.executable, "-m", "apiprof.cli", "show", name, "--db", str(path)],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "100"},
        ).stdout

    assert "I/O written: median 4.9 KiB" in show("gt.write_file")
    assert "I/O" not in show("gt.leaf")


def test_often_called_targets_are_sampled_not_skipped():
    result = alloc.run_allocation_pass(gt.mid, [gt.mid.__code__, gt.leaf.__code__], repeat=3)
    leaf_io = result.io_read[gt.leaf.__code__]
    expected = 3 * (
        alloc.IO_FULL_CALLS + (gt.LEAF_CALLS - alloc.IO_FULL_CALLS) / alloc.IO_SAMPLE_EVERY
    )
    assert 0.6 * expected < leaf_io.count < 1.5 * expected  # ≈278 of 3000 calls
    mid_io = result.io_read[gt.mid.__code__]
    # ≈93 nested counter reads each, excluded
    assert mid_io.count == 3 and mid_io.total == 0 and leaf_io.total == 0
    assert result.calls[gt.leaf.__code__] == 3 * gt.LEAF_CALLS  # sampling touches I/O figures only


def test_json_load_from_file_reads_exactly_the_file(tmp_path, monkeypatch):
    """The bundled json pack's file scenario, through the worker's profiling step: at every size
    json.load's I/O read is the file's size, and the fit says it grows as O(n)."""
    from apiprof.engine.isolation.protocol import MeasureSettings
    from apiprof.engine.isolation.worker import Worker
    from apiprof.engine.scan.options import BUNDLED_SCENARIOS
    from apiprof.engine.scenarios.files import load_scenario_file
    from apiprof.model.growth import fit_growth

    [spec] = [
        s
        for s in load_scenario_file(BUNDLED_SCENARIOS / "json.toml")
        if s.id.endswith("#load-from-file")
    ]
    monkeypatch.chdir(tmp_path)
    worker = Worker(None, 512, send=lambda task_id, message: None)
    settings = MeasureSettings(repeat=3)
    measured = [
        m for size in spec.sizes for m in worker.profile_size(spec, size, settings).measurements
    ]
    reads = {}
    for m in measured:
        if m.qualname == "json.load" and m.metric is Metric.IO_READ:
            reads[m.size] = m.histogram
    assert sorted(reads) == list(spec.sizes)
    json_text = '{"id": 0, "ok": true}'  # every record has this length with its index's digits
    for n, hist in reads.items():
        expected = 2 + sum(len(json_text) - 1 + len(str(i)) for i in range(n)) + 2 * (n - 1)
        assert hist.count == 3 and hist.total == 3 * expected, n
    assert (
        fit_growth(sorted(reads), [reads[n].median for n in sorted(reads)]).growth_class == "O(n)"
    )


def test_a_scenario_that_closes_or_reuses_the_counters_descriptor_loses_only_io(tmp_path):
    """Package code may close every descriptor it did not open; the pass must go on, with no
    exception in the scenario and no numbers read from whatever file reuses the number."""
    counter = iocount.open_io_counter()
    fd = counter._fd
    counter.close()
    stray = tmp_path / "stray.txt"
    stray.write_text("not the proc file\n" * 3)

    def hostile():
        gt.leaf()
        os.closerange(fd, fd + 1)  # the counter's descriptor is the next free one, like ours was
        reused = os.open(stray, os.O_RDONLY)  # ...and a plain file takes its number
        gt.leaf()
        os.close(reused)

    result = alloc.run_allocation_pass(hostile, [gt.leaf.__code__, hostile.__code__], repeat=2)
    assert result.calls[gt.leaf.__code__] == 4 and result.runs == 2  # the scenario ran undisturbed
    leaf_io = result.io_read.get(gt.leaf.__code__)
    # at most the first call, exact
    assert leaf_io is None or (leaf_io.count <= 1 and leaf_io.total == 0)
