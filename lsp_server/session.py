"""What the server knows between requests, and the answer to each request.

A :class:`Session` joins the pieces: settings (:mod:`.config`), the merged cost index
(:mod:`.costs`), jedi (:mod:`.resolve`) and the text (:mod:`.render`). It speaks lsprotocol
types but knows nothing of transports; :mod:`.server` wires it to pygls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from apiprof.lsp_server.config import ServerConfig, read_config, unwrap_section
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.latency import LatencyTracker
from apiprof.lsp_server.render import describe, short_hint
from apiprof.lsp_server.resolve import Candidate, Resolver

log = logging.getLogger(__name__)

Notify = Callable[[types.MessageType, str], None]

_KINDS = {
    "module": types.CompletionItemKind.Module,
    "class": types.CompletionItemKind.Class,
    "instance": types.CompletionItemKind.Variable,
    "function": types.CompletionItemKind.Function,
    "param": types.CompletionItemKind.Variable,
    "path": types.CompletionItemKind.File,
    "keyword": types.CompletionItemKind.Keyword,
    "property": types.CompletionItemKind.Property,
    "statement": types.CompletionItemKind.Variable,
}


class Session:
    def __init__(self, notify: Notify | None = None, *, jedi_only: bool = False) -> None:
        self._notify = notify or (lambda level, message: None)
        self.jedi_only = jedi_only  # baseline mode for bench/lsp_latency.py: no cost lookups
        self.root: str | None = None
        self.label_details = False  # client shows labelDetails; then `detail` waits for resolve
        self.markup = {
            "completion": types.MarkupKind.PlainText,
            "hover": types.MarkupKind.PlainText,
        }
        self.config = ServerConfig()
        self._base_options: dict[str, Any] = {}
        self.index = CostIndex([], report=self.warn)
        self.resolver = Resolver()
        self.latency = LatencyTracker(on_slow=self.info)
        self._hints: dict[str, str] = {}
        self._hints_generation = -1

    # -- messages to the client's log channel (never popups) --------------------------------
    def warn(self, message: str) -> None:
        log.warning(message)
        self._notify(types.MessageType.Warning, message)

    def info(self, message: str) -> None:
        log.info(message)
        self._notify(types.MessageType.Info, message)

    # -- configuration ----------------------------------------------------------------------
    def start(
        self, root: str | None, options: Any, capabilities: types.ClientCapabilities | None = None
    ) -> None:
        """Apply the workspace root, ``initializationOptions`` and the client's capabilities."""
        self.root = root
        capabilities = capabilities or types.ClientCapabilities()
        self.label_details, self.markup = _read_capabilities(capabilities)
        self.pulls_configuration = bool(
            capabilities.workspace and capabilities.workspace.configuration
        )
        self.resolver = None
        unwrapped = unwrap_section(options)
        self._base_options = unwrapped if isinstance(unwrapped, dict) else {}
        self._apply(options)

    def update_settings(self, settings: Any) -> None:
        """Workspace settings override ``initializationOptions`` key by key."""
        settings = unwrap_section(settings)
        if settings in (None, {}):
            return
        if not isinstance(settings, dict):
            self._apply(settings)  # reported as a problem; the defaults stay in force
            return
        self._apply({**self._base_options, **settings})

    def _apply(self, options: Any) -> None:
        config, problems = read_config(options)
        for problem in problems:
            self.warn(f"apiprof settings: {problem}")
        paths = config.database_paths(self.root)
        if paths != self.index.paths:
            self.index.close()
            self.index = CostIndex(paths, report=self.warn)
            self.index.refresh()
            self.info("apiprof databases: " + ", ".join(str(p) for p in paths))
        if self.resolver is None or config.environment_path != self.resolver.environment_path:
            self.resolver = Resolver(self.root, config.environment_path, report=self.warn)
            if self.resolver.environment is not None:
                self.info(f"apiprof: resolving imports in {self.resolver.environment}")
        self.config = config
        self.latency.slow_ms = config.latency.slow_request_ms
        self._hints.clear()

    # -- requests ---------------------------------------------------------------------------
    def complete(self, doc: TextDocument, position: types.Position) -> dict[str, Any]:
        """A ``CompletionList`` as JSON-ready dicts: 1000 lsprotocol objects would cost more to
        build (attrs validators) and to serialise than the cost lookups themselves.

        The hint goes where the client shows it without a round trip: ``labelDetails`` when
        supported (``detail`` then arrives with ``completionItem/resolve``), else ``detail``.
        ``data`` is just the qualified name, to keep a 1000-item list small.
        """
        line, column = _server_position(doc, position)
        with_costs = not self.jedi_only and self.config.completion.cost_hints
        candidates = self.resolver.complete(
            doc.source, _doc_path(doc), line, column, qualnames=with_costs
        )
        items = [_item(i, c) for i, c in enumerate(candidates)]
        if with_costs:
            hints = self._hints_for([c.qualname for c in candidates if c.costed])
            for item, c in zip(items, candidates):
                if c.costed:
                    if self.label_details:
                        item["labelDetails"] = {"description": hints[c.qualname]}
                    else:
                        item["detail"] = hints[c.qualname]
                    item["data"] = c.qualname
        return {"isIncomplete": False, "items": items}

    def _hints_for(self, names: list[str]) -> dict[str, str]:
        self.index.refresh()
        if self._hints_generation != self.index.generation:
            self._hints.clear()
            self._hints_generation = self.index.generation
        missing = [n for n in names if n not in self._hints]
        if missing:
            for name, summary in self.index.lookup_many(missing).items():
                self._hints[name] = short_hint(summary)
        return {n: self._hints[n] for n in names}

    def resolve_completion(self, item: types.CompletionItem) -> types.CompletionItem:
        qualname = item.data
        if not isinstance(qualname, str) or self.jedi_only:
            return item
        self.index.refresh()
        summary = self.index.lookup(qualname)
        item.detail = short_hint(summary)
        text = describe(summary, self.config, title=qualname)
        item.documentation = types.MarkupContent(kind=self.markup["completion"], value=text)
        return item

    def hover(self, doc: TextDocument, position: types.Position) -> types.Hover | None:
        if not self.config.hover.enabled:
            return None
        line, column = _server_position(doc, position)
        names = self.resolver.names_at(doc.source, _doc_path(doc), line, column)
        if not names or self.jedi_only:
            return None
        self.index.refresh()
        found = self.index.lookup_many(names)
        summary = next((found[n] for n in names if found[n] is not None), None)
        if summary is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(
                kind=self.markup["hover"], value=describe(summary, self.config)
            )
        )

    def latency_report(self) -> dict[str, Any]:
        return {
            "methods": self.latency.report(),
            "databases": [str(p) for p in self.index.paths],
            "problems": self.index.problems(),
        }


def _read_capabilities(caps: types.ClientCapabilities) -> tuple[bool, dict[str, types.MarkupKind]]:
    """labelDetails support, and markdown where the client renders it (else the same text, plain)."""
    text = caps.text_document or types.TextDocumentClientCapabilities()
    item = (
        text.completion and text.completion.completion_item
    ) or types.ClientCompletionItemOptions()
    hover_formats = (text.hover and text.hover.content_format) or []
    markdown, plain = types.MarkupKind.Markdown, types.MarkupKind.PlainText
    return bool(item.label_details_support), {
        "completion": markdown if markdown in (item.documentation_format or []) else plain,
        "hover": markdown if markdown in hover_formats else plain,
    }


def _item(index: int, candidate: Candidate) -> dict[str, Any]:
    # sortText keeps jedi's order: editors sort by it before filtering.
    kind = _KINDS.get(candidate.type, types.CompletionItemKind.Text)
    return {"label": candidate.label, "kind": kind.value, "sortText": f"{index:05d}"}


def _server_position(doc: TextDocument, position: types.Position) -> tuple[int, int]:
    """0-based line and code-point column (client units may be UTF-16); past-end lines pass."""
    lines = doc.lines
    if position.line >= len(lines):
        return position.line, position.character
    text = lines[position.line].rstrip("\r\n")
    clamped = types.Position(
        position.line, min(position.character, doc.position_codec.client_num_units(text))
    )
    server = doc.position_from_client_units(clamped)
    return server.line, server.character


def _doc_path(doc: TextDocument) -> str | None:
    path = to_fs_path(doc.uri)
    return path if path and Path(path).suffix in (".py", ".pyi", "") else None
