"""The aggregation service under load: many clients uploading at once, on SQLite and on
PostgreSQL, side by side in one run.

For each backend a real ``apiprof serve`` (uvicorn) is started on loopback with an empty store
(PostgreSQL: a throwaway server in a temporary directory, as in the tests). ``--clients``
threads, each with its own keep-alive connection, upload distinct batches (``--apis`` APIs of
two metrics each, like a collected program's summary) for ``--seconds``, and re-send a share of
what they sent (``--retries``) as a client whose answer was lost would. Reported: batches added
per second, latency percentiles, and whether the aggregate the service then serves equals the
sum of the batches sent — exactly once each.

Run: python bench/service_load.py [--clients 16] [--seconds 10] [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pgcluster import find_binaries, postgres_cluster
from servicehelp import Service, batch_doc, running_service, same_totals, sum_of

MODULES = ("json", "textwrap", "statistics", "csv", "re", "pathlib", "email.utils", "shlex")


def make_batches(count: int, apis: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    batches = []
    for _ in range(count):
        chosen = []
        for _ in range(apis):
            module = rng.choice(MODULES)
            chosen.append(
                (
                    f"{module}.f{rng.randrange(200)}",
                    module,
                    [rng.lognormvariate(8, 1.2) for _ in range(rng.randrange(20, 200))],
                )
            )
        doc = batch_doc(chosen)
        for api in doc["apis"]:  # a CPU-time histogram beside the wall-time one
            api["metrics"]["cpu_ns"] = [
                list(r)
                for r in api["metrics"]["wall_ns"][: max(1, len(api["metrics"]["wall_ns"]) // 2)]
            ]
        batches.append(doc)
    return batches


def client(
    service: Service, batches: list[dict], deadline: float, retries: float, seed: int, out: dict
) -> None:
    rng = random.Random(seed)
    sent, latencies, failures = [], [], 0
    for doc in batches:
        if time.perf_counter() > deadline:
            break
        t0 = time.perf_counter()
        status, _ = service.post_batch(doc)
        latencies.append(time.perf_counter() - t0)
        if status == 200:
            sent.append(doc)
            if rng.random() < retries:  # the answer was "lost": send it again
                status, answer = service.post_batch(doc)
                failures += status != 200 or answer["status"] != "duplicate"
        else:
            failures += 1
    out.update(sent=sent, latencies=latencies, failures=failures)


def load(name: str, target: str, args: argparse.Namespace, batches: list[dict]) -> None:
    with running_service(target) as service:
        per_client = [batches[i :: args.clients] for i in range(args.clients)]
        results: list[dict] = [{} for _ in range(args.clients)]
        start = time.perf_counter()
        deadline = start + args.seconds
        threads = [
            threading.Thread(
                target=client, args=(service, per_client[i], deadline, args.retries, i, results[i])
            )
            for i in range(args.clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        sent = [doc for r in results for doc in r["sent"]]
        latencies = sorted(x for r in results for x in r["latencies"])
        failures = sum(r["failures"] for r in results)
        exact = same_totals(service.bucket_totals(), sum_of(sent))
    q = statistics.quantiles(latencies, n=100)
    print(
        f"{name:>10}: {len(sent) / elapsed:7.1f} batches/s ({len(sent)} in {elapsed:.1f} s, {args.clients} clients), "
        f"latency p50 {q[49] * 1e3:.1f} ms, p95 {q[94] * 1e3:.1f} ms, p99 {q[98] * 1e3:.1f} ms; "
        f"failures {failures}; aggregate == sum sent: {'yes' if exact else 'NO'}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--apis", type=int, default=5, help="APIs per batch")
    parser.add_argument("--retries", type=float, default=0.05, help="share of batches sent twice")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), action="append")
    args = parser.parse_args()
    backends = args.backend or ["sqlite", "postgresql"]
    batches = make_batches(20_000, args.apis, seed=1)
    print(
        f"{args.clients} clients × {args.seconds:g} s, {args.apis} APIs per batch, {args.retries:.0%} re-sent"
    )
    with tempfile.TemporaryDirectory(prefix="apiprof-service-bench-") as tmp, ExitStack() as stack:
        for backend in backends:
            if backend == "sqlite":
                load("SQLite", str(Path(tmp) / "service.db"), args, batches)
            elif find_binaries() is None:
                print(
                    "PostgreSQL: skipped (initdb/postgres not installed; apt-get install postgresql)"
                )
            else:
                url = stack.enter_context(postgres_cluster("bench"))
                load("PostgreSQL", url, args, batches)


if __name__ == "__main__":
    main()
