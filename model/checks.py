"""Checks for data from places apiprof does not control: worker pipes, other databases, uploads.

A qualified name becomes a database key, a page file name in the Sphinx output and a hover in
the editor, so every name is checked where it enters (discovery, the worker pipe, merge): dotted
Python identifiers only — no ``/``, ``..``, spaces or control characters. A measured number is
checked against what a real measurement can be: a well-formed histogram row
(:func:`~apiprof.model.histogram.check_bucket`) whose values are also within physical sense for
its metric — no call runs for a week, allocates 256 TiB or counts 2^40 samples in one row.
"""

from __future__ import annotations

from apiprof.model.buckets import bucket_bounds, check_bucket, check_sub_bucket
from apiprof.model.records import Metric

MAX_QUALNAME = 512
MAX_PARTS = 32
MAX_SCENARIO_ID = 512

WEEK_NS = 7 * 24 * 3600 * 10**9
MAX_BYTES = 2**48
MAX_CALLS = 2**40
MAX_COUNT = 2**40
"""Most samples one histogram row can hold (a trillion calls)."""


def qualname_problem(name: object) -> str:
    """Why ``name`` is not a valid qualified Python name ("" when it is)."""
    if not isinstance(name, str) or not name:
        return "an empty name"
    shown = repr(name[:80])
    if len(name) > MAX_QUALNAME:
        return f"{shown}… is longer than {MAX_QUALNAME} characters"
    parts = name.split(".")
    if len(parts) > MAX_PARTS:
        return f"{shown} has more than {MAX_PARTS} dotted parts"
    if not all(part.isidentifier() for part in parts):
        return f"{shown} is not a dotted Python name"
    return ""


def is_qualname(name: object) -> bool:
    return not qualname_problem(name)


def within(name: str, package: str) -> bool:
    """Whether ``name`` is ``package`` itself or a name inside it."""
    return name == package or name.startswith(package + ".")


def scenario_id_problem(scenario_id: object) -> str:
    """Why a scenario id is unusable as a key and label ("" when it is fine)."""
    if not isinstance(scenario_id, str) or not scenario_id:
        return "an empty scenario id"
    if len(scenario_id) > MAX_SCENARIO_ID:
        return f"a scenario id longer than {MAX_SCENARIO_ID} characters"
    if not scenario_id.isprintable():
        return f"the scenario id {scenario_id[:80]!r} holds control characters"
    return ""


def largest_value(metric: Metric) -> float:
    """The largest value one observation of ``metric`` can have and make sense."""
    if metric.is_time:
        return float(WEEK_NS)
    if metric is Metric.CALLS:
        return float(MAX_CALLS)
    return float(MAX_BYTES)


def bucket_row_problem(
    metric: Metric, index: int, count: int, total: float, total_sq: float
) -> str:
    """Why a stored histogram row of ``metric`` cannot come from real measurements ("" when
    it can): malformed, negative, sums outside the bucket's bounds, or absurd magnitudes."""
    try:
        check_bucket(index, count, total, total_sq)
    except ValueError as error:
        return str(error)
    if count > MAX_COUNT:
        return f"bucket {index} claims {count} samples, more than {MAX_COUNT}"
    low, _ = bucket_bounds(index)
    limit = largest_value(metric)
    if count and low > limit:
        return (
            f"bucket {index} holds values of at least {low:g} {metric.unit}, beyond the "
            f"{limit:g} {metric.unit} any real {metric.label} can reach"
        )
    return ""


def sub_bucket_row_problem(
    metric: Metric, index: int, sub: int, count: int, total: float, total_sq: float
) -> str:
    """:func:`bucket_row_problem` for a sub-bucket row. Its magnitude needs no check of its own:
    a bucket row holding at least its values is checked, and so is that they fit in it."""
    try:
        check_sub_bucket(index, sub, count, total, total_sq)
    except ValueError as error:
        return str(error)
    if count > MAX_COUNT:
        return f"sub-bucket {index}.{sub} claims {count} samples, more than {MAX_COUNT}"
    return ""
