"""Feature registration: which LSP methods the server answers, and nothing else.

Every handler goes through :func:`register`, the one place requests pass: it times the handler
(the delay self-check) and turns an unexpected exception into one line on the client's log
channel and an empty answer — a language server that crashes or pops up error dialogs while
someone types is worse than one that stays quiet. A wrapper that must see every request (a
delay tracker, a tracer) belongs in :func:`register`.

The transport is :mod:`.rpc` (hardened framing, an answer to every request), not pygls' own
reader; documents are kept by :mod:`.text` (LSP line breaks), not pygls' workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.uris import to_fs_path

import apiprof
from apiprof.lsp_server import rpc
from apiprof.lsp_server.background import Background
from apiprof.lsp_server.config import SECTION, STANDALONE, unwrap_section
from apiprof.lsp_server.delays import RequestDelays
from apiprof.lsp_server.latency import REPORT_METHOD
from apiprof.lsp_server.session import Session
from apiprof.lsp_server.text import UnknownDocument

log = logging.getLogger(__name__)

COMPANION_TRIGGERS = ["."]
"""A companion never opens a list on a space: the Python server beside it decides when lists
open (on ``.``, or as a name is typed — also after ``import``), and our costed items join them."""
STANDALONE_TRIGGERS = [".", " "]
"""Alone, a space after ``import`` opens the list; any other space gets an empty answer at once."""

POLL_SECONDS = 1.0
"""How often the databases are checked for changes while the editor is idle."""


class JsonReady:
    """A result that is JSON data already (dicts and lists): written as it is. pygls would walk
    it with cattrs first — 28 ms for 800 inlay hints, against 1.4 ms for ``json.dumps``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def make_converter() -> cattrs.Converter:
    converter = default_converter()
    converter.register_unstructure_hook(JsonReady, lambda ready: ready.value)
    return converter


class ApiprofServer(LanguageServer):
    """pygls server whose own errors go to the log channel instead of error popups."""

    def __init__(self, *, jedi_only: bool = False) -> None:
        super().__init__("apiprof-lsp", apiprof.__version__, converter_factory=make_converter)
        self.session = Session(self.log_to_client, jedi_only=jedi_only)
        self._poll: asyncio.TimerHandle | None = None
        self.delays = RequestDelays(self.log_to_client)

    def log_to_client(self, level: types.MessageType, message: str) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=level, message=message))
        except Exception:  # no transport yet (e.g. during tests of the session alone)
            log.debug("could not send log message: %s", message)

    def report(self, message: str) -> None:
        log.warning(message)
        self.log_to_client(types.MessageType.Warning, message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, JsonRpcMethodNotFound):
            return  # answered with -32601; not our fault
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.log_to_client(types.MessageType.Error, f"apiprof-lsp internal error: {error}")

    # -- transports: ours, not pygls' (see rpc.py) ------------------------------------------
    def start_io(self, *_: Any) -> int:
        """Serve on stdio until ``exit``; returns the process exit code."""
        try:
            return asyncio.run(rpc.serve_stdio(self, self.report))
        finally:
            self.stop_background()

    def start_tcp(self, host: str, port: int) -> int:  # type: ignore[override]
        try:
            return asyncio.run(rpc.serve_tcp(self, host, port, self.report))
        finally:
            self.stop_background()

    # -- background work and refreshes ------------------------------------------------------
    def start_background(self) -> None:
        if self.session.background is None:
            loop = asyncio.get_running_loop()
            self.session.background = Background(
                self.session.gate, loop.call_soon_threadsafe, soon=loop.call_soon_threadsafe
            )
            self.session.on_stale = self.ask_for_fresh_hints

    def stop_background(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
        if self.session.background is not None:
            self.session.background.stop()
        self.delays.close()

    def start_polling(self) -> None:
        def tick() -> None:
            try:
                if self.session.poll():
                    self.ask_for_fresh_hints()
            except Exception:
                log.exception("polling the databases failed")
            self._poll = asyncio.get_running_loop().call_later(POLL_SECONDS, tick)

        self._poll = asyncio.get_running_loop().call_later(POLL_SECONDS, tick)

    def ask_for_fresh_hints(self) -> None:
        """``workspace/inlayHint/refresh`` (and the code lens one) where the client supports it."""
        support = self.session.refresh_support
        if support["inlay"]:
            self.workspace_inlay_hint_refresh(None)
        if support["lens"] and self.session.config.code_lens.enabled:
            self.workspace_code_lens_refresh(None)


def register(
    server: ApiprofServer,
    method: str,
    handler: Callable[[Any], Any],
    *,
    fallback: Callable[[Any], Any] = lambda params: None,
    options: Any = None,
    builtin: bool = False,
    uses_jedi: bool = False,
    event: str | None = None,
) -> None:
    """Answer ``method`` with ``handler``: timed, and answering ``fallback(params)`` if it
    raises. A handler that ``uses_jedi`` holds the jedi gate throughout, so background work
    pauses while it runs (the GIL would otherwise be shared with it). A request with an
    ``event`` name is marked for the delay tracker, waiting for the gate included."""
    session = server.session
    gate = session.gate.held if uses_jedi else contextlib.nullcontext

    def gated(params: Any) -> Any:
        with gate():
            return handler(params)

    answer = gated if event is None else server.delays.marked(event)(gated)

    @functools.wraps(handler)
    def run(params: Any) -> Any:
        started = session.latency.start()
        try:
            result = answer(params)
            return JsonReady(result) if isinstance(result, dict | list) else result
        except UnknownDocument as exc:
            session.info(f"apiprof-lsp: {method} for {exc}, which the client has not opened")
        except Exception as exc:
            log.error("%s failed:\n%s", method, traceback.format_exc())
            server.log_to_client(
                types.MessageType.Error, f"{method} failed: {type(exc).__name__}: {exc}"
            )
        finally:
            session.latency.stop(method, started)
        return fallback(params)

    if builtin:  # replaces pygls' own handler (document sync)
        server.protocol.fm.add_builtin_feature(method, run)
    else:
        server.feature(method, options)(run)


def pull_configuration(server: ApiprofServer) -> None:
    """Ask a pull-model client for its ``apiprof`` settings (``workspace/configuration``).

    The answer arrives on the event loop later; it overrides ``initializationOptions`` key by key,
    exactly like pushed settings.
    """
    if not server.session.pulls_configuration:
        return

    def apply(result: Any) -> None:
        try:
            server.session.update_settings(result[0] if result else None)
        except Exception as exc:
            server.log_to_client(
                types.MessageType.Error, f"workspace/configuration answer ignored: {exc}"
            )

    server.workspace_configuration(
        types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]), apply
    )


def create_server(*, jedi_only: bool = False) -> ApiprofServer:
    server = ApiprofServer(jedi_only=jedi_only)
    session = server.session

    def initialize(params: types.InitializeParams) -> None:
        root = params.root_uri or (
            params.workspace_folders[0].uri if params.workspace_folders else None
        )
        options = unwrap_section(params.initialization_options)
        standalone = isinstance(options, dict) and options.get("mode") == STANDALONE
        server.protocol.fm.feature_options[types.TEXT_DOCUMENT_COMPLETION] = (
            types.CompletionOptions(
                trigger_characters=STANDALONE_TRIGGERS if standalone else COMPANION_TRIGGERS,
                resolve_provider=True,
            )
        )
        session.documents.encoding = server.workspace.position_encoding or "utf-16"
        server.start_background()
        session.start(
            (to_fs_path(root) if root else None) or params.root_path,
            params.initialization_options,
            params.capabilities,
        )
        server.delays.start(session.config.delays, session.root)

    def initialized(params: types.InitializedParams) -> None:
        pull_configuration(server)
        server.start_polling()

    def shutdown(params: Any) -> None:
        server.stop_background()

    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        if params.settings in (None, {}):  # pull-model clients only say "something changed"
            pull_configuration(server)
        else:
            session.update_settings(params.settings)

    def completion(params: types.CompletionParams) -> dict[str, Any]:
        trigger = params.context.trigger_character if params.context else None
        return session.complete(params.text_document.uri, params.position, trigger)

    def hover(params: types.HoverParams) -> types.Hover | None:
        return session.hover(params.text_document.uri, params.position)

    def inlay_hints(params: types.InlayHintParams) -> list[dict[str, Any]]:
        return session.inlay_hints(params.text_document.uri, params.range)

    def code_lenses(params: types.CodeLensParams) -> list[dict[str, Any]]:
        return session.code_lenses(params.text_document.uri)

    register(server, types.INITIALIZE, initialize)
    register(server, types.INITIALIZED, initialized)
    register(server, types.SHUTDOWN, shutdown)
    register(
        server,
        types.TEXT_DOCUMENT_DID_OPEN,
        lambda p: session.did_open(p.text_document),
        builtin=True,
    )
    register(server, types.TEXT_DOCUMENT_DID_CHANGE, session.did_change, builtin=True)
    register(
        server,
        types.TEXT_DOCUMENT_DID_CLOSE,
        lambda p: session.did_close(p.text_document.uri),
        builtin=True,
    )
    register(server, types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration)
    register(
        server,
        types.TEXT_DOCUMENT_COMPLETION,
        completion,
        fallback=lambda p: {"isIncomplete": False, "items": []},
        uses_jedi=True,
        event="completion",
        options=types.CompletionOptions(
            trigger_characters=COMPANION_TRIGGERS, resolve_provider=True
        ),
    )
    register(
        server,
        types.COMPLETION_ITEM_RESOLVE,
        session.resolve_completion,
        fallback=lambda item: item,
        event="resolve",
    )
    register(server, types.TEXT_DOCUMENT_HOVER, hover, uses_jedi=True, event="hover")
    register(
        server,
        types.TEXT_DOCUMENT_INLAY_HINT,
        inlay_hints,
        fallback=lambda p: [],
        uses_jedi=True,
        options=types.InlayHintOptions(resolve_provider=False),
    )
    register(
        server, types.INLAY_HINT_RESOLVE, session.resolve_inlay_hint, fallback=lambda hint: hint
    )
    register(
        server,
        types.TEXT_DOCUMENT_CODE_LENS,
        code_lenses,
        fallback=lambda p: [],
        uses_jedi=True,
        options=types.CodeLensOptions(resolve_provider=False),
    )
    register(server, REPORT_METHOD, lambda p: session.latency_report())
    return server
