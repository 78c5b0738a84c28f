"""Feature registration: which LSP methods the server answers, and nothing else.

Each handler times itself (the delay self-check) and turns any unexpected exception into one
line on the client's log channel and an empty answer — a language server that crashes or pops
up error dialogs while someone types is worse than one that stays quiet.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

import apiprof
from apiprof.lsp_server.config import SECTION
from apiprof.lsp_server.delays import RequestDelays
from apiprof.lsp_server.latency import REPORT_METHOD
from apiprof.lsp_server.session import Session

log = logging.getLogger(__name__)
T = TypeVar("T")

TRIGGER_CHARACTERS = [".", " "]  # "json." and "from json import "


class ApiprofServer(LanguageServer):
    """pygls server whose own errors go to the log channel instead of error popups."""

    def __init__(self, *, jedi_only: bool = False) -> None:
        super().__init__("apiprof-lsp", apiprof.__version__)
        self.session = Session(self.log_to_client, jedi_only=jedi_only)
        self.delays = RequestDelays(self.log_to_client)

    def log_to_client(self, level: types.MessageType, message: str) -> None:
        try:
            self.window_log_message(types.LogMessageParams(type=level, message=message))
        except Exception:  # no transport yet (e.g. during tests of the session alone)
            log.debug("could not send log message: %s", message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.log_to_client(types.MessageType.Error, f"apiprof-lsp internal error: {error}")


def guarded(server: ApiprofServer, method: str, fallback: Callable[[Any], T]) -> Callable:
    """Time a handler and answer ``fallback(params)`` if it raises."""

    def wrap(handler: Callable[[Any], T]) -> Callable[[Any], T]:
        @functools.wraps(handler)
        def run(params: Any) -> T:
            started = server.session.latency.start()
            try:
                return handler(params)
            except Exception as exc:
                log.error("%s failed:\n%s", method, traceback.format_exc())
                server.log_to_client(
                    types.MessageType.Error, f"{method} failed: {type(exc).__name__}: {exc}"
                )
                return fallback(params)
            finally:
                server.session.latency.stop(method, started)

        return run

    return wrap


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

    @server.feature(types.INITIALIZE)
    @guarded(server, types.INITIALIZE, lambda p: None)
    def initialize(params: types.InitializeParams) -> None:
        root = params.root_uri or (
            params.workspace_folders[0].uri if params.workspace_folders else None
        )
        session.start(
            to_fs_path(root) if root else params.root_path,
            params.initialization_options,
            params.capabilities,
        )
        server.delays.start(session.config.delays, session.root)

    @server.feature(types.INITIALIZED)
    @guarded(server, types.INITIALIZED, lambda p: None)
    def initialized(params: types.InitializedParams) -> None:
        pull_configuration(server)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded(server, types.WORKSPACE_DID_CHANGE_CONFIGURATION, lambda p: None)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        if params.settings in (None, {}):  # pull-model clients only say "something changed"
            pull_configuration(server)
        else:
            session.update_settings(params.settings)

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS, resolve_provider=True),
    )
    @guarded(server, types.TEXT_DOCUMENT_COMPLETION, lambda p: {"isIncomplete": False, "items": []})
    @server.delays.marked("completion")
    def completion(params: types.CompletionParams) -> dict[str, Any]:
        doc = server.workspace.get_text_document(params.text_document.uri)
        return session.complete(doc, params.position)

    @server.feature(types.COMPLETION_ITEM_RESOLVE)
    @guarded(server, types.COMPLETION_ITEM_RESOLVE, lambda item: item)
    @server.delays.marked("resolve")
    def completion_resolve(item: types.CompletionItem) -> types.CompletionItem:
        return session.resolve_completion(item)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded(server, types.TEXT_DOCUMENT_HOVER, lambda p: None)
    @server.delays.marked("hover")
    def hover(params: types.HoverParams) -> types.Hover | None:
        doc = server.workspace.get_text_document(params.text_document.uri)
        return session.hover(doc, params.position)

    @server.feature(REPORT_METHOD)
    def latency_report(params: Any) -> dict[str, Any]:
        return session.latency_report()

    return server
