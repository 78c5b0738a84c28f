"""Send finished delay traces to a collection service (off unless a URL is configured).

The contract: ``PUT {url}/v1/traces/{trace_id}/{filename}`` with the file as the body, for
``trace.sqlite`` and ``summary.json``, and ``Authorization: Bearer TOKEN`` when a token is
configured. The server stores idempotently by (trace id, file name), so a retry after a lost
answer is harmless. 2xx means stored. Connection failures, timeouts, 408, 429 and 5xx are
retried with exponential back-off (honouring ``Retry-After``); other answers are final.
A trace directory gets ``uploaded.json`` once both files are stored, so traces that could not
be sent are found and sent again the next time the tracker starts.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from apiprof.errors import ApiprofError
from apiprof.tracing.settings import UploadSettings
from apiprof.tracing.summary import utc_now, write_json

log = logging.getLogger(__name__)

FILES = (("trace.sqlite", "application/vnd.sqlite3"), ("summary.json", "application/json"))
UPLOADED = "uploaded.json"
MAX_BACKOFF_SECONDS = 300.0
RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}


class UploadError(ApiprofError):
    """A trace could not be stored by the collection service."""


@dataclass(frozen=True)
class UploadResult:
    trace_id: str
    attempts: int  # PUT requests made for all files together


def file_url(base: str, trace_id: str, filename: str) -> str:
    quote = urllib.parse.quote
    return f"{base.rstrip('/')}/v1/traces/{quote(trace_id, safe='')}/{quote(filename, safe='')}"


def _retry_after(error: urllib.error.HTTPError) -> float | None:
    value = error.headers.get("Retry-After") if error.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own back-off
        return None


def put_file(
    url: str,
    body: bytes,
    content_type: str,
    settings: UploadSettings,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """PUT one file with retries; returns the number of attempts it took."""
    headers = {"Content-Type": content_type, "User-Agent": "apiprof-delay-tracker"}
    token = settings.bearer_token()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    attempts = 0
    while True:
        attempts += 1
        request = urllib.request.Request(url, data=body, headers=headers, method="PUT")
        wait: float | None = None
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout_seconds) as answer:
                answer.read()
            return attempts
        except urllib.error.HTTPError as error:
            if error.code not in RETRYABLE_STATUS:
                raise UploadError(
                    f"{url}: the collection service refused the file ({error.code} {error.reason});"
                    " check upload.url and the token"
                ) from None
            problem = f"{error.code} {error.reason}"
            wait = _retry_after(error)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            problem = str(getattr(error, "reason", error))
        if attempts > settings.retries:
            raise UploadError(
                f"{url}: not stored after {attempts} attempts (last: {problem}); it is sent again"
                " when the tracker next starts"
            )
        backoff = settings.backoff_seconds * 2 ** (attempts - 1)
        sleep(min(MAX_BACKOFF_SECONDS, wait if wait is not None else backoff))


def upload_trace(
    directory: Path, settings: UploadSettings, sleep: Callable[[float], None] = time.sleep
) -> UploadResult:
    """Upload a trace directory's two files; marks the directory uploaded when both are stored."""
    trace_id = directory.name
    attempts = 0
    for filename, content_type in FILES:
        body = (directory / filename).read_bytes()
        attempts += put_file(
            file_url(settings.url, trace_id, filename), body, content_type, settings, sleep
        )
    write_json(directory / UPLOADED, {"url": settings.url, "at": utc_now(), "attempts": attempts})
    return UploadResult(trace_id, attempts)


def pending_traces(output_dir: Path) -> list[Path]:
    """Finished trace directories not uploaded yet, oldest first."""
    if not output_dir.is_dir():
        return []
    return sorted(
        d
        for d in output_dir.iterdir()
        if d.is_dir()
        and all((d / name).is_file() for name, _ in FILES)
        and not (d / UPLOADED).exists()
    )


class Uploader:
    """Uploads trace directories one at a time on a background thread."""

    def __init__(
        self,
        settings: UploadSettings,
        on_done: Callable[[Path, UploadResult | UploadError], None] | None = None,
    ) -> None:
        self.settings = settings
        self.on_done = on_done
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="apiprof-uploader", daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def submit(self, directory: Path) -> None:
        self._queue.put(directory)

    def close(self, timeout: float | None = None) -> None:
        """Finish what is queued (up to ``timeout`` seconds), then stop."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while (directory := self._queue.get()) is not None:
            outcome: UploadResult | UploadError
            try:
                outcome = upload_trace(directory, self.settings)
                log.info("uploaded %s in %d requests", directory.name, outcome.attempts)
            except UploadError as error:
                outcome = error
                log.warning("upload of %s failed: %s", directory.name, error)
            except OSError as error:  # the directory went away
                outcome = UploadError(f"{directory}: {error}")
                log.warning("upload of %s failed: %s", directory.name, error)
            if self.on_done is not None:
                self.on_done(directory, outcome)
