"""What crosses the pipe between the scanning process and a worker: JSON lines, and codecs.

Both sides import this module; it holds no policy. One message is one JSON object on one line
(``\\n``-terminated UTF-8). Records are encoded here once so their fields are not spelled out
in the worker and again in the parent.
"""

from __future__ import annotations

import json
import os
from typing import Any

from apiprof.model.histogram import Histogram
from apiprof.model.records import CallEdge, Measurement, Metric

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""A reply larger than this is treated as a broken worker rather than buffered forever."""


def encode(message: dict[str, Any]) -> bytes:
    return (
        json.dumps(message, separators=(",", ":"), allow_nan=False, default=str) + "\n"
    ).encode()


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one message to a raw file descriptor, retrying short writes."""
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class LineReader:
    """Splits bytes arriving on a pipe into complete JSON messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        if len(self._buffer) > MAX_MESSAGE_BYTES:
            raise ValueError("worker message exceeds the size limit")
        messages = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if line.strip():
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("worker message is not a JSON object")
                messages.append(message)
        return messages


def measurement_to_json(m: Measurement) -> dict[str, Any]:
    return {
        "qualname": m.qualname,
        "scenario_id": m.scenario_id,
        "metric": str(m.metric),
        "size": m.size,
        "buckets": [list(row) for row in m.histogram.rows()],
    }


def measurement_from_json(data: dict[str, Any]) -> Measurement:
    return Measurement(
        qualname=data["qualname"],
        scenario_id=data["scenario_id"],
        metric=Metric(data["metric"]),
        histogram=Histogram.from_buckets(tuple(row) for row in data["buckets"]),
        size=int(data["size"]),
    )


def edge_to_json(edge: CallEdge) -> list[Any]:
    return [edge.caller, edge.callee, edge.count]


def edge_from_json(data: list[Any]) -> CallEdge:
    return CallEdge(str(data[0]), str(data[1]), int(data[2]))
