"""Window reports from the time tree versus a linear pass over the samples.

For recordings of 1,000,000 and 10,000,000 samples (a synthetic program: two threads, a call
graph of a few hundred functions walked with the time locality of real phases), it builds the
tree and times, for several window sizes, the tree's answer against one pass over every sample,
side by side in this run, and checks that the counts are identical at P = 100 %: first the
counts alone (what the tree answers), then a whole report (the counts plus top stacks and the
inclusive and exclusive function totals: the tree adds up its nodes' pre-aggregated totals, the
linear pass rolls the window's distinct stacks up frame by frame). A last part goes
through the recording file as ``apiprof window`` does — ``window_report`` on the stored tree,
read node by node — versus a pass over the file's samples with the same roll-up. Times are CPU
seconds of this process (medians), so a busy machine's waiting does not count.

Run: python bench/time_tree.py [--sizes 1000000,10000000] [--file-sizes 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import time
from array import array
from pathlib import Path

from apiprof.tracing.recording import Recording, write_recording
from apiprof.tracing.sampler import ThreadInfo
from apiprof.tracing.stacks import Frame, StackTable
from apiprof.tracing.timetree import (
    DEFAULT_SHAPE,
    MemoryTree,
    TreeShape,
    count_linearly,
    int_array,
    query,
)
from apiprof.tracing.window import Summary, summarize, summarize_window, window_report

WINDOW_SHARES = (0.001, 0.01, 0.1, 0.5, 1.0)
INTERVAL_NS = 1_000_000


def synthetic_program(
    n: int, unique_stacks: int = 5000, seed: int = 7
) -> tuple[StackTable, array[int], array[int], array[int]]:
    """``n`` samples of two threads at 1 ms: the stack table, times, thread numbers, stacks.

    The main thread runs phases (a request, a build step): each phase draws from its own few
    dozen stacks of a pool of ``unique_stacks`` call paths, most often repeating the last one;
    phases recur, as a server's requests do. The second thread idles but for every 50th tick.
    """
    rng = random.Random(seed)
    table = StackTable()
    functions = [
        Frame(f"module{i // 20}.function{i}", f"module{i // 20}.py", i) for i in range(400)
    ]
    callees = {i: rng.sample(range(1, 400), rng.randint(2, 6)) for i in range(400)}
    pool: set[tuple[int, ...]] = set()
    while len(pool) < unique_stacks:
        path = [0]
        for _ in range(rng.randint(2, 24)):
            path.append(rng.choice(callees[path[-1]]))
        pool.add(tuple(path))
    stack_ids = [table.intern(functions[j] for j in path) for path in sorted(pool)]
    phases = [rng.sample(stack_ids, min(len(stack_ids), rng.randint(10, 60))) for _ in range(200)]
    weights = [[1 / (rank + 1) for rank in range(len(phase))] for phase in phases]
    idle = table.intern(
        [Frame("Thread.run", "threading.py", 1), Frame("Condition.wait", "threading.py", 2)]
    )
    times, threads, stacks = int_array(), int_array(), int_array()
    t, left, phase, stack = 0, 0, 0, stack_ids[0]
    for i in range(n // 2):
        t += INTERVAL_NS + rng.randint(-50_000, 50_000)
        if left == 0:
            phase, left = rng.randrange(len(phases)), int(rng.expovariate(1 / 500)) + 1
        left -= 1
        if rng.random() < 0.3:
            stack = rng.choices(phases[phase], weights[phase])[0]
        times.extend((t, t))
        threads.extend((0, 1))
        stacks.extend((stack, idle if i % 50 else stack))
    return table, times, threads, stacks


def timed(function, repeat: int) -> tuple[float, object]:
    """Median CPU seconds of ``repeat`` calls (waiting for a busy machine's cores not counted)."""
    best, result = [], None
    for _ in range(repeat):
        started = time.process_time()
        result = function()
        best.append(time.process_time() - started)
    return statistics.median(best), result


def windows(duration: int, share: float, count: int, rng: random.Random) -> list[tuple[int, int]]:
    width = max(1, int(duration * share))
    return [
        (start, start + width)
        for start in (rng.randint(0, max(0, duration - width)) for _ in range(count))
    ]


def bench_memory(n: int, unique: int, repeat: int, shape: TreeShape) -> None:
    table, times, _, stacks = synthetic_program(n, unique)
    duration = times[-1] + 1
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    tree = MemoryTree(times, stacks, shape, end=duration, table=table)
    build = time.perf_counter() - started
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    inner = [node for node in tree.nodes.values() if node.inner]
    kept = sum(len(node.kept[0]) for node in inner if node.kept is not None)
    totals = sum(len(node.functions[0]) for node in inner if node.functions is not None)
    print(
        f"\n{n:,} samples ({len(set(stacks)):,} distinct stacks, {duration / 1e9:,.0f} s at 1 ms, 2"
        f" threads), tree {shape.describe()}: built in {build:.1f} s, {len(tree.nodes):,} nodes,"
        f" {kept:,} kept (stack, count) pairs, {totals:,} function totals,"
        f" peak RSS +{(rss_after - rss_before) / 1024:,.0f} MiB"
    )
    print(
        f"  {'window':>8}  {'counts: tree':>12}  {'linear pass':>11}  {'speed-up':>8}"
        f"  {'report: tree':>12}  {'linear':>8}  {'speed-up':>8}  counts"
    )
    rng = random.Random(n)
    for share in WINDOW_SHARES:
        spans = windows(duration, share, 3, rng)
        tree_s = statistics.median(timed(lambda s=s: tree.window(*s), repeat)[0] for s in spans)
        linear_s = statistics.median(
            timed(lambda s=s: count_linearly(times, stacks, *s), max(1, repeat // 2))[0]
            for s in spans
        )
        # a report: the counts plus top stacks and the function totals; the tree's totals are
        # pre-aggregated per node, a linear pass rolls its window's stacks up itself
        report_s = statistics.median(
            timed(lambda s=s: tree_summary(tree, table, *s), repeat)[0] for s in spans
        )
        linear_counts = [count_linearly(times, stacks, *s) for s in spans]
        rollup_s = statistics.median(
            timed(lambda c=c: summarize(c, table), repeat)[0] for c in linear_counts
        )
        linear_report_s = linear_s + rollup_s
        same = all(same_report(tree, table, times, stacks, *s) for s in spans[:1])
        print(
            f"  {share:>8.1%}  {tree_s * 1e3:>10.2f}ms  {linear_s * 1e3:>9.0f}ms"
            f"  {linear_s / tree_s:>7.0f}×  {report_s * 1e3:>10.2f}ms"
            f"  {linear_report_s * 1e3:>6.0f}ms  {linear_report_s / report_s:>7.0f}×  "
            + ("identical" if same else "DIFFERENT")
        )


def tree_summary(tree: MemoryTree, table: StackTable, start: int, end: int) -> Summary:
    """What ``window_report`` computes from the tree's answer."""
    return summarize_window(tree.window(start, end), table)


def same_report(
    tree: MemoryTree, table: StackTable, times: array[int], stacks: array[int], start: int, end: int
) -> bool:
    """The tree's counts and report equal the linear pass's (P = 100 %)."""
    counts = count_linearly(times, stacks, start, end)
    window = tree.window(start, end)
    return window.stacks == counts and tree_summary(tree, table, start, end) == summarize(
        counts, table
    )


def bench_file(n: int, unique: int, repeat: int, shape: TreeShape) -> None:
    table, times, threads, stacks = synthetic_program(n, unique)
    duration = times[-1] + 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.trace"
        started = time.perf_counter()
        write_recording(
            path,
            times=times,
            samples=list(zip(threads, stacks, strict=True)),
            stacks=table,
            threads=[ThreadInfo(0, 1, None, "MainThread"), ThreadInfo(1, 2, None, "worker")],
            meta={"interval_ns": INTERVAL_NS, "duration_ns": duration},
            tree=shape,
        )
        written = time.perf_counter() - started
        size = path.stat().st_size
        print(
            f"\nthrough the file: {n:,} samples written with the tree in {written:.1f} s"
            f" ({size / 2**20:,.0f} MiB)"
        )
        print(
            f"  {'window':>8}  {'window_report':>13}  {'file pass + roll-up':>19}  {'speed-up':>8}"
            "  counts"
        )
        rng = random.Random(n)
        with Recording(path) as recording:
            tree = recording.tree(shape)
            table = recording.stacks

            def file_report(start: int, end: int) -> dict[int, int]:
                counts: dict[int, int] = {}
                for t, stack in recording.conn.execute("SELECT t_ns, stack FROM samples"):
                    if start <= t < end:
                        counts[stack] = counts.get(stack, 0) + 1
                summarize(counts, table)
                return counts

            for share in WINDOW_SHARES:
                span = windows(duration, share, 1, rng)[0]
                report_s, _ = timed(
                    lambda s=span: window_report(recording, *s, shape=shape), repeat
                )
                file_s, truth = timed(lambda s=span: file_report(*s), 1)
                same = query(tree, *span).stacks == truth
                print(
                    f"  {share:>8.1%}  {report_s * 1e3:>11.2f}ms  {file_s * 1e3:>17.0f}ms"
                    f"  {file_s / report_s:>7.0f}×  " + ("identical" if same else "DIFFERENT")
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--file-sizes", default="1000000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--unique-stacks", type=int, default=5000, help="call paths of the program")
    parser.add_argument("--leaf-size", type=int, default=DEFAULT_SHAPE.leaf_size)
    parser.add_argument("--fanout", type=int, default=DEFAULT_SHAPE.fanout)
    args = parser.parse_args(argv)
    shape = TreeShape(args.leaf_size, args.fanout, 100.0)
    print(
        f"Python {sys.version.split()[0]}; window = share of the recording, 3 random windows each"
    )
    for n in (int(s) for s in args.sizes.split(",") if s):
        bench_memory(n, args.unique_stacks, args.repeat, shape)
    for n in (int(s) for s in args.file_sizes.split(",") if s):
        bench_file(n, args.unique_stacks, args.repeat, shape)
    return 0


if __name__ == "__main__":
    sys.exit(main())
