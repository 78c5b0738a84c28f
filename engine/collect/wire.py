"""What travels between a user's machine and the aggregation service.

**A batch** (``POST /v1/batches``) is one summary of collected measurements, written to the
local spool exactly as it will be uploaded. It holds only these fields — nothing else leaves
the machine (``docs/collection.rst`` repeats this list for people; a test checks uploads
against :data:`BATCH_FIELDS` and :data:`API_FIELDS`)::

    {"format": "apiprof-batch/1",
     "batch_id": "<32 random hex digits>",          # for exactly-once adds, drawn at random
     "python": "3.12.1", "implementation": "cpython",
     "system": "Linux", "machine": "x86_64",        # OS name and CPU architecture
     "machine_speed_ns": 1543272.0,                 # machine-speed index, or null
     "apis": [{"qualname": "json.dumps", "module": "json", "kind": "function",
               "version": "2.0.9",                  # version of the API's package
               "metrics": {"wall_ns": [[bucket, count, sum, sum_sq], ...],
                           "cpu_ns": [...]}}]}

Never sent: file paths, arguments or return values, user, host or CPU model names, times of
day, process ids — the collector does not record them.

:func:`parse_batch` is the service's strict reading of a batch: schema, sizes and bucket sanity
(counts ≥ 0, sums consistent with the bucket's bounds and with each other, values within
physical sense — the checks merge applies, :mod:`apiprof.model.checks`); any violation raises
:class:`BatchError` with the reason and the HTTP status to answer.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from apiprof.errors import UsageError
from apiprof.model.buckets import ZERO_BUCKET
from apiprof.model.checks import bucket_row_problem, is_qualname
from apiprof.model.histogram import Histogram
from apiprof.model.records import EntryKind, Environment, Metric

FORMAT = "apiprof-batch/1"
BATCH_FIELDS = frozenset(
    {
        "format",
        "batch_id",
        "python",
        "implementation",
        "system",
        "machine",
        "machine_speed_ns",
        "apis",
    }
)
API_FIELDS = frozenset({"qualname", "module", "kind", "version", "metrics"})

MAX_APIS = 5000
MAX_BUCKET = 64
MAX_COUNT = 2**53

_BATCH_ID = re.compile(r"[0-9a-f]{32}")
_PYTHON = re.compile(r"\d{1,2}\.\d{1,3}\.\d{1,3}[a-z0-9+.]{0,16}")
_WORD = re.compile(r"[A-Za-z0-9_.+-]{1,40}")
_VERSION = re.compile(r"[A-Za-z0-9_.+!-]{0,64}")


class BatchError(UsageError):
    """A batch the service must refuse; ``status`` is the HTTP status that says why."""

    def __init__(self, reason: str, status: int = 422) -> None:
        super().__init__(reason)
        self.reason, self.status = reason, status


@dataclass(frozen=True)
class ApiSample:
    """The histograms one program measured for one API."""

    qualname: str
    module: str
    kind: str
    version: str
    histograms: dict[Metric, Histogram] = field(default_factory=dict)

    @property
    def package(self) -> str:
        return self.module.split(".", 1)[0]


@dataclass(frozen=True)
class Batch:
    batch_id: str
    python: str
    implementation: str
    system: str
    machine: str
    machine_speed_ns: float | None
    apis: tuple[ApiSample, ...]

    @property
    def environment(self) -> Environment:
        """The environment the service files the buckets under (no CPU model: never sent)."""
        return Environment(self.python, self.implementation, self.system, self.machine, cpu="")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "batch_id": self.batch_id,
            "python": self.python,
            "implementation": self.implementation,
            "system": self.system,
            "machine": self.machine,
            "machine_speed_ns": self.machine_speed_ns,
            "apis": [
                {
                    "qualname": api.qualname,
                    "module": api.module,
                    "kind": api.kind,
                    "version": api.version,
                    "metrics": {
                        str(metric): [list(row) for row in hist.rows()]
                        for metric, hist in api.histograms.items()
                        if hist
                    },
                }
                for api in self.apis
            ],
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()


def new_batch_id() -> str:
    return os.urandom(16).hex()


def slice_of(qualname: str, slices: int) -> int:
    """Which of ``slices`` partitions an API belongs to (the same on every backend and client:
    the first 32 bits of its name's MD5, modulo ``slices``)."""
    import hashlib  # here: it loads OpenSSL, which collected programs need not pay for

    return int(hashlib.md5(qualname.encode()).hexdigest()[:8], 16) % slices


# -- strict reading ------------------------------------------------------------------------------


def _reject_constant(name: str) -> float:
    raise BatchError(f"{name} is not a number JSON allows", 400)


def parse_batch(body: bytes) -> Batch:
    """Read and check one uploaded batch; raises :class:`BatchError` on the first problem."""
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except RecursionError:
        raise BatchError("the JSON is nested too deeply", 400) from None
    except ValueError as exc:  # also UnicodeDecodeError
        raise BatchError(f"the body is not valid JSON ({exc})", 400) from None
    doc = _object(data, "the batch", BATCH_FIELDS)
    if doc.get("format") != FORMAT:
        raise BatchError(f"format must be {FORMAT!r}, got {doc.get('format')!r}")
    batch_id = _match(doc, "batch_id", _BATCH_ID, "32 lowercase hex digits")
    speed = doc.get("machine_speed_ns")
    if speed is not None and (not _is_number(speed) or not 0 < speed < 1e13):
        raise BatchError("machine_speed_ns must be null or a positive number of nanoseconds")
    apis = doc.get("apis")
    if not isinstance(apis, list) or not apis:
        raise BatchError("apis must be a non-empty list")
    if len(apis) > MAX_APIS:
        raise BatchError(f"a batch holds at most {MAX_APIS} APIs, this one {len(apis)}", 413)
    return Batch(
        batch_id=batch_id,
        python=_match(doc, "python", _PYTHON, "a Python version like 3.12.1"),
        implementation=_match(doc, "implementation", _WORD, "a short word"),
        system=_match(doc, "system", _WORD, "a short word"),
        machine=_match(doc, "machine", _WORD, "a short word"),
        machine_speed_ns=float(speed) if speed is not None else None,
        apis=tuple(_api(item, i) for i, item in enumerate(apis)),
    )


def _object(value: Any, what: str, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BatchError(f"{what} must be a JSON object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise BatchError(f"{what} has fields no batch may carry: {', '.join(unknown)}")
    missing = sorted(allowed - set(value))
    if missing:
        raise BatchError(f"{what} lacks required fields: {', '.join(missing)}")
    return value


def _match(doc: dict[str, Any], key: str, pattern: re.Pattern[str], expected: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BatchError(f"{key} must be {expected}, got {str(value)[:80]!r}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _api(item: Any, index: int) -> ApiSample:
    where = f"apis[{index}]"
    doc = _object(item, where, API_FIELDS)
    qualname, module = doc["qualname"], doc["module"]
    if not is_qualname(qualname) or "." not in qualname:
        raise BatchError(
            f"{where}.qualname must be a dotted Python name, got {str(qualname)[:80]!r}"
        )
    if not is_qualname(module) or not qualname.startswith(module + "."):
        raise BatchError(f"{where}.module must be the module part of {qualname!r}")
    kinds = {k.value for k in EntryKind}
    if doc["kind"] not in kinds:
        raise BatchError(f"{where}.kind must be one of {', '.join(sorted(kinds))}")
    version = doc["version"]
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise BatchError(f"{where}.version must be a package version string")
    metrics = doc["metrics"]
    if not isinstance(metrics, dict) or not metrics:
        raise BatchError(f"{where}.metrics must be a non-empty object")
    histograms: dict[Metric, Histogram] = {}
    for name, rows in metrics.items():
        try:
            metric = Metric(name)
        except ValueError:
            raise BatchError(f"{where}.metrics: unknown metric {str(name)[:40]!r}") from None
        histograms[metric] = _histogram(metric, rows, f"{where}.metrics.{name}")
    return ApiSample(qualname, module, doc["kind"], version, histograms)


def _histogram(metric: Metric, rows: Any, where: str) -> Histogram:
    if not isinstance(rows, list) or not rows or len(rows) > MAX_BUCKET + 2:
        raise BatchError(f"{where} must be a list of 1 to {MAX_BUCKET + 2} buckets")
    seen: set[int] = set()
    for row in rows:
        if not isinstance(row, list) or len(row) != 4:
            raise BatchError(f"{where}: each bucket is [bucket, count, sum, sum_sq]")
        index, count, total, total_sq = row
        if not isinstance(index, int) or isinstance(index, bool):
            raise BatchError(f"{where}: bucket index must be an integer")
        if not ZERO_BUCKET <= index <= MAX_BUCKET or index in seen:
            raise BatchError(f"{where}: bucket {index} is out of range or repeated")
        seen.add(index)
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_COUNT:
            raise BatchError(f"{where}: bucket {index} count must be an integer ≥ 0")
        if not _is_number(total) or not _is_number(total_sq):
            raise BatchError(f"{where}: bucket {index} sums must be finite numbers")
        _check_row(metric, index, count, float(total), float(total_sq), where)
    return Histogram.from_buckets(rows)


def _check_row(
    metric: Metric, index: int, count: int, total: float, total_sq: float, where: str
) -> None:
    """The checks merge applies to other databases' rows (bucket bounds, physical sense), and
    one more: the sum and the sum of squares of the same values must agree."""
    problem = bucket_row_problem(metric, index, count, total, total_sq)
    if problem:
        raise BatchError(f"{where}: {problem}")
    slack = 1e-9 * max(1.0, abs(total), abs(total_sq))
    if total * total > count * total_sq * (1 + 1e-9) + slack:
        raise BatchError(
            f"{where}: bucket {index} sum and sum of squares contradict each other (sum² > count × sum_sq)"
        )


# -- the aggregate, as ``GET /v1/aggregate`` streams it ------------------------------------------

AGGREGATE_FORMAT = "apiprof-aggregate/1"
AGGREGATE_TABLES: tuple[tuple[str, tuple[str, ...], str | None], ...] = (
    ("environments", ("id", "python", "implementation", "system", "machine", "cpu"), None),
    ("packages", ("name", "version"), None),
    ("scenarios", ("id", "qualname", "source", "description", "size_axis"), None),
    ("collected_versions", ("package", "version", "batches"), None),
    ("machine_speeds", ("environment_id", "bucket", "count", "sum", "sum_sq"), None),
    (
        "entry_points",
        (
            "qualname",
            "package",
            "module",
            "kind",
            "signature",
            "summary",
            "source_file",
            "source_line",
        ),
        "qualname",
    ),
    ("aliases", ("alias", "qualname"), "qualname"),
    ("coverage", ("qualname", "package", "status", "reason"), "qualname"),
    ("call_edges", ("caller", "callee", "count"), "caller"),
    (
        "buckets",
        (
            "qualname",
            "metric",
            "scenario_id",
            "size",
            "environment_id",
            "bucket",
            "count",
            "sum",
            "sum_sq",
        ),
        "qualname",
    ),
)
"""(table, columns, the column that decides its slice — None: small, always sent whole).

The stream is newline-delimited JSON: a header ``{"format", "slice", "slices"}`` (slice null for
the whole aggregate), then ``{"table", "rows"}`` chunks in this order, then ``{"end": true,
"rows": N}``. A stream without its end line is incomplete and must not be used."""
