"""What the server knows between requests, and the answer to each request.

A :class:`Session` joins the pieces: settings (:mod:`.config`), the open documents (:mod:`.text`),
the merged cost index (:mod:`.costs`), jedi (:mod:`.resolve`), the calls' targets
(:mod:`.targets`), completion items (:mod:`.completion`) and the text (:mod:`.render`). It speaks lsprotocol types and JSON-ready dicts but knows nothing of
transports; :mod:`.server` wires it to pygls.

By default the server is a *companion*: it runs beside pyright, pylance or jedi-language-server,
so it offers only what they lack — completion items that carry a cost (with the labels,
``filterText`` and ``sortText`` those servers use, so a client that merges the lists can fold the
twins together), the cost section of a hover, and inlay hints after calls. ``"mode":
"standalone"`` answers every completion and hover in full, for people who run it alone.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from apiprof.format import format_ns
from apiprof.lsp_server.background import Background
from apiprof.lsp_server.calls import CallMap
from apiprof.lsp_server.completion import (
    EMPTY_COMPLETION,
    IMPORT_CONTEXT,
    TYPED_PREFIX,
    completion_items,
)
from apiprof.lsp_server.config import ServerConfig, read_config, unwrap_section
from apiprof.lsp_server.costs import CostIndex
from apiprof.lsp_server.latency import LatencyTracker
from apiprof.lsp_server.profiles import CostProfile
from apiprof.lsp_server.render import (
    Markup,
    call_hint,
    cost_lines,
    full_profile,
    hover_text,
    short_hint,
)
from apiprof.lsp_server.resolve import JediGate, Resolver
from apiprof.lsp_server.targets import CallTargets
from apiprof.lsp_server.text import Document, Documents

log = logging.getLogger(__name__)

Notify = Callable[[types.MessageType, str], None]
MAX_CACHED_CALL_COSTS = 50_000


@dataclass(frozen=True, slots=True)
class CallCost:
    """What a profiled call shows: computed once per set of target names (until a database or
    the settings change) and shared by every call site with those targets."""

    time_ns: float | None  # typical time (code lenses sum it); None when only allocation is known
    hinted: bool  # at or above the inlay hints' threshold
    fields: dict[str, Any]  # an inlay hint's label, padding and tooltip (or data to resolve it)


_UNBUILT = object()


@dataclass
class _ShownHints:
    """The inlay hints of one version of a document, built range by range as the client asks:
    a whole-file request after a viewport one, or a refresh, builds nothing twice."""

    calls: CallMap
    stamp: tuple[Any, ...]  # (version, database generation, targets generation, settings)
    hints: list[Any]  # per site of ``calls.by_end``: its hint, None (none shown) or _UNBUILT


class Session:
    def __init__(self, notify: Notify | None = None, *, jedi_only: bool = False) -> None:
        self._notify = notify or (lambda level, message: None)
        self.jedi_only = jedi_only  # baseline mode for bench/lsp_latency.py: no cost lookups
        self.root: str | None = None
        self.label_details = False  # client shows labelDetails; then `detail` waits for resolve
        self.markup = {"completion": Markup(False), "hover": Markup(False)}
        self.refresh_support = {"inlay": False, "lens": False}
        self.resolves_tooltips = False  # client fetches an inlay hint's tooltip when shown
        self.pulls_configuration = False
        self.warmed_up = False  # jedi has loaded the environment and builtins
        self.config = ServerConfig()
        self._base_options: dict[str, Any] = {}
        self._reported: set[str] = set()
        self.index = CostIndex([], report=self.warn)
        self.gate = JediGate()
        self.resolver = Resolver(gate=self.gate)
        self.latency = LatencyTracker(on_slow=self.info)
        self.documents = Documents()
        self.background: Background | None = None  # set by the server once the loop runs
        self._hints: dict[str, str | None] = {}
        self._tooltips: dict[str, dict[str, str]] = {}
        self._call_costs: dict[tuple[str, ...], CallCost | None] = {}  # by target names
        self._hints_generation = -1
        self._announced_generation = 0
        self._settings_changed = False
        self._shown: dict[str, _ShownHints] = {}  # inlay hints per open document
        self.on_stale: Callable[[], None] | None = None  # asks the client to fetch hints again
        self.calls = CallTargets(
            self.documents,
            self.resolver,
            background=lambda: self.background,
            can_refresh=lambda: self.refresh_support["inlay"],
            stale=lambda: self.on_stale() if self.on_stale is not None else None,
        )

    # -- messages to the client's log channel (never popups) --------------------------------
    def warn(self, message: str) -> None:
        log.warning(message)
        self._notify(types.MessageType.Warning, message)

    def info(self, message: str) -> None:
        log.info(message)
        self._notify(types.MessageType.Info, message)

    def warn_once(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self.warn(message)

    # -- configuration ----------------------------------------------------------------------
    def start(
        self, root: str | None, options: Any, capabilities: types.ClientCapabilities | None = None
    ) -> None:
        """Apply the workspace root, ``initializationOptions`` and the client's capabilities."""
        self.root = root
        capabilities = capabilities or types.ClientCapabilities()
        self.label_details, self.markup = _read_capabilities(capabilities)
        workspace = capabilities.workspace or types.WorkspaceClientCapabilities()
        self.pulls_configuration = bool(workspace.configuration)
        self.refresh_support = {
            "inlay": bool(workspace.inlay_hint and workspace.inlay_hint.refresh_support),
            "lens": bool(workspace.code_lens and workspace.code_lens.refresh_support),
        }
        hints = capabilities.text_document and capabilities.text_document.inlay_hint
        self.resolves_tooltips = bool(
            hints and hints.resolve_support and "tooltip" in hints.resolve_support.properties
        )
        unwrapped = unwrap_section(options)
        self._base_options = unwrapped if isinstance(unwrapped, dict) else {}
        self._apply(options, new_resolver=True)
        self.index.refresh()
        self._announced_generation = self.index.generation
        self._settings_changed = False
        if self.background is not None:
            self.background.submit("warm-up", self._warm_up)

    def _warm_up(self) -> Callable[[], None]:
        self.resolver.warm_up()

        def done() -> None:
            self.warmed_up = True
            # What is alive now lives as long as the server (modules, jedi's builtins and
            # stubs): keep the cyclic collector from scanning it again and again mid-request.
            gc.freeze()

        return done

    def update_settings(self, settings: Any) -> None:
        """Workspace settings override ``initializationOptions`` key by key."""
        settings = unwrap_section(settings)
        if settings in (None, {}):
            return
        if not isinstance(settings, dict):
            self._apply(settings)  # reported as a problem; the defaults stay in force
            return
        self._apply({**self._base_options, **settings})

    def _apply(self, options: Any, *, new_resolver: bool = False) -> None:
        config, problems = read_config(options)
        for problem in problems:
            self.warn_once(f"apiprof settings: {problem}")
        paths = config.database_paths(self.root)
        if paths != self.index.paths:
            self.index.close()
            self.index = CostIndex(paths, report=self.warn)
            self.index.refresh()
            self.info("apiprof databases: " + ", ".join(str(p) for p in paths))
        if new_resolver or config.environment_path != self.resolver.environment_path:
            with self.gate.held():  # the background thread may be inside jedi
                self.resolver = Resolver(
                    self.root, config.environment_path, report=self.warn, gate=self.gate
                )
            self.calls.use(self.resolver)
            if self.resolver.environment is not None:
                self.info(f"apiprof: resolving imports in {self.resolver.environment}")
        self._settings_changed = config != self.config
        self.config = config
        self.latency.slow_ms = config.latency.slow_request_ms
        self._hints.clear()
        self._tooltips.clear()
        self._call_costs.clear()

    def poll(self) -> bool:
        """Called every second or so: True when hints shown in the editor may be out of date (a
        database changed, settings changed) and the client should ask for them again."""
        self.index.refresh()
        changed = self._settings_changed or self.index.generation != self._announced_generation
        self._announced_generation = self.index.generation
        self._settings_changed = False
        return changed

    # -- documents --------------------------------------------------------------------------
    def did_open(self, item: types.TextDocumentItem) -> None:
        doc = self.documents.open(item)
        self._prepare(doc)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri not in self.documents:
            self.info(f"apiprof-lsp: ignored an edit of {uri}, which the client never opened")
            return
        self.documents.change(params)

    def did_close(self, uri: str) -> None:
        self.documents.close(uri)
        self.calls.forget(uri)
        self._shown.pop(uri, None)

    def _prepare(self, doc: Document) -> None:
        """Parse a new document and find its calls' targets in the background, so the first
        request on it (or its inlay hints) need not wait for a large file to be parsed."""
        if doc.source.strip():
            calls = (
                self.jedi_only or self.config.inlay_hints.enabled or self.config.code_lens.enabled
            )
            self.calls.resolve_in_background(doc, calls=calls)

    # -- completion -------------------------------------------------------------------------
    def complete(
        self, uri: str, position: types.Position, trigger: str | None = None
    ) -> dict[str, Any]:
        """A ``CompletionList`` as JSON-ready dicts: 1000 lsprotocol objects would cost more to
        build (attrs validators) and to serialise than the cost lookups themselves.

        The hint goes where the client shows it without a round trip: ``labelDetails`` when
        supported (``detail`` then arrives with ``completionItem/resolve``), else ``detail``.
        ``data`` is just the qualified name, to keep a 1000-item list small.
        """
        doc = self.documents.get(uri)
        where = doc.position(position)
        if where is None:
            return EMPTY_COMPLETION
        line, column = where
        before = doc.lines[line][:column]
        if trigger == " " and not IMPORT_CONTEXT.search(before):
            return EMPTY_COMPLETION  # a space asks only after `import`
        companion = self.config.companion and not self.jedi_only
        with_costs = not self.jedi_only and self.config.completion.cost_hints
        if companion and not with_costs:
            return EMPTY_COMPLETION  # costs are all a companion adds
        candidates = self.resolver.complete(
            doc.source, doc.path, line, column, qualnames=with_costs
        )
        hints = self._hints_for([c.qualname for c in candidates if c.costed]) if with_costs else {}
        items = completion_items(
            candidates,
            hints,
            style=self.config.completion.sort_like,
            typed=TYPED_PREFIX.search(before).group(),  # type: ignore[union-attr]
            companion=companion,
            label_details=self.label_details,
        )
        return {"isIncomplete": False, "items": items}

    def _fresh_caches(self) -> None:
        self.index.refresh()
        if self._hints_generation != self.index.generation:
            self._hints.clear()
            self._tooltips.clear()
            self._call_costs.clear()
            self._hints_generation = self.index.generation

    def _hints_for(self, names: list[str]) -> dict[str, str | None]:
        self._fresh_caches()
        missing = [n for n in names if n not in self._hints]
        if missing:
            for name, profile in self.index.lookup_many(missing).items():
                self._hints[name] = short_hint(profile)
        return {n: self._hints[n] for n in names}

    def resolve_completion(self, item: types.CompletionItem) -> types.CompletionItem:
        qualname = item.data
        if not isinstance(qualname, str) or self.jedi_only:
            return item
        self._fresh_caches()
        profile = self.index.lookup(qualname)
        if profile is None:
            return item
        item.detail = short_hint(profile)
        markup = self.markup["completion"]
        item.documentation = types.MarkupContent(
            kind=_kind(markup), value=full_profile(profile, self.config, markup)
        )
        return item

    # -- hover ------------------------------------------------------------------------------
    def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        if not self.config.hover.enabled:
            return None
        doc = self.documents.get(uri)
        where = doc.position(position)
        if where is None:
            return None
        names = self.resolver.names_at(doc.source, doc.path, *where)
        if not names or self.jedi_only:
            return None
        self._fresh_caches()
        found = self.index.lookup_many(names)
        profile = next((found[n] for n in names if found[n] is not None), None)
        if profile is None:
            return None
        markup = self.markup["hover"]
        text = hover_text(profile, self.config, markup)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=_kind(markup), value=text))

    # -- calls: inlay hints and code lenses -------------------------------------------------
    def _costs_of(self, targets: list[tuple[str, ...]]) -> list[CallCost | None]:
        """What each call shows (None when it has no profile): the first candidate name a
        database knows. One batch lookup for the target names not seen since a database or the
        settings last changed; the rest cost a dict access each."""
        self._fresh_caches()
        costs = self._call_costs
        missing = [names for names in dict.fromkeys(targets) if names not in costs]
        if missing:
            if len(costs) + len(missing) > MAX_CACHED_CALL_COSTS:
                costs.clear()
                missing = list(dict.fromkeys(targets))
            found = self.index.lookup_many(dict.fromkeys(n for names in missing for n in names))
            for names in missing:
                profile = next((found[n] for n in names if found[n] is not None), None)
                costs[names] = self._call_cost(profile)
        return [costs[names] for names in targets]

    def _call_cost(self, profile: CostProfile | None) -> CallCost | None:
        figures = profile.headline if profile is not None else None
        if profile is None or figures is None:
            return None
        time_ns = figures.time_ns
        minimum_ns = self.config.inlay_hints.minimum_microseconds * 1e3
        fields: dict[str, Any] = {"label": call_hint(profile) or "", "paddingLeft": True}
        if self.resolves_tooltips:  # 2,000 tooltips would triple the answer's size
            fields["data"] = profile.qualname
        else:
            fields["tooltip"] = self._tooltip(profile)
        hinted = time_ns >= minimum_ns if time_ns is not None else minimum_ns <= 0
        return CallCost(time_ns, hinted, fields)

    def inlay_hints(self, uri: str, where: types.Range) -> list[dict[str, Any]]:
        """``≈59 µs`` after each profiled call in the range (not below the configured threshold)."""
        options = self.config.inlay_hints
        if not options.enabled:
            return []
        doc = self.documents.get(uri)
        self._fresh_caches()
        start = doc.position(where.start) or (len(doc.lines), 0)
        end = doc.position(where.end) or (len(doc.lines), 0)
        calls = self.calls.call_map(doc)
        wanted = calls.ending_between((start[0] + 1, start[1]), (end[0] + 1, end[1]))
        if self.jedi_only:  # the baseline: what finding the calls' targets costs, no more
            self.calls.of(doc, calls, calls.by_end[wanted.start : wanted.stop])
            return []
        shown = self._shown_hints(doc, calls)
        todo = [i for i in wanted if shown.hints[i] is _UNBUILT]
        if todo:
            by_end = calls.by_end
            sites = [by_end[i] for i in todo]
            costs = self._costs_of(self.calls.of(doc, calls, sites))
            ascii_only = doc.source.isascii()  # then columns are code units in every encoding
            for i, site, cost in zip(todo, sites, costs, strict=True):
                if cost is None or not cost.hinted:
                    shown.hints[i] = None
                    continue
                line, column = site.end
                line -= 1
                character = column if ascii_only else doc.units(line, column)
                shown.hints[i] = {"position": {"line": line, "character": character}, **cost.fields}
        return [hint for hint in shown.hints[wanted.start : wanted.stop] if hint is not None]

    def _shown_hints(self, doc: Document, calls: CallMap) -> _ShownHints:
        """This version's hints built so far (none after an edit, a database change, new
        targets from jedi or new settings); a document without versions is built afresh."""
        stamp = (doc.version, self.index.generation, self.calls.generation, self.config)
        shown = self._shown.get(doc.uri)
        if shown is None or shown.calls is not calls or shown.stamp != stamp or doc.version is None:
            shown = _ShownHints(calls, stamp, [_UNBUILT] * len(calls.sites))
            self._shown[doc.uri] = shown
        return shown

    def resolve_inlay_hint(self, hint: types.InlayHint) -> types.InlayHint:
        """The tooltip of a hint the client is about to show: the concise cost lines."""
        if isinstance(hint.data, str) and not self.jedi_only:
            self._fresh_caches()
            profile = self.index.lookup(hint.data)
            if profile is not None and profile.profiled:
                tooltip = self._tooltip(profile)
                hint.tooltip = types.MarkupContent(
                    kind=types.MarkupKind(tooltip["kind"]), value=tooltip["value"]
                )
        return hint

    def _tooltip(self, profile: CostProfile) -> dict[str, str]:
        tooltip = self._tooltips.get(profile.qualname)
        if tooltip is None:
            markup = self.markup["hover"]
            tooltip = {
                "kind": _kind(markup).value,
                "value": markup.lines(cost_lines(profile, self.config, markup)),
            }
            self._tooltips[profile.qualname] = tooltip
        return tooltip

    def code_lenses(self, uri: str) -> list[dict[str, Any]]:
        """Above each function: the summed typical time of the profiled calls in its body."""
        if not self.config.code_lens.enabled or self.jedi_only:
            return []
        doc = self.documents.get(uri)
        calls = self.calls.call_map(doc)
        call_costs = self._costs_of(self.calls.of(doc, calls, calls.sites))
        lenses = []
        for function in calls.functions:
            costs = [
                time
                for i in function.sites
                if (cost := call_costs[i]) is not None and (time := cost.time_ns) is not None
            ]
            if not costs:
                continue
            line = function.start[0] - 1
            position = {"line": line, "character": doc.units(line, function.start[1])}
            count = len(costs)
            lenses.append(
                {
                    "range": {"start": position, "end": position},
                    "command": {
                        "title": f"≈{format_ns(sum(costs))} in {count} profiled call{'s' if count != 1 else ''}",
                        "command": "",
                    },
                }
            )
        return lenses

    def latency_report(self) -> dict[str, Any]:
        return {
            "methods": self.latency.report(),
            "databases": [str(p) for p in self.index.paths],
            "problems": self.index.problems(),
            "background": bool(self.background and self.background.busy()),
            "warmedUp": self.warmed_up,
        }


def _kind(markup: Markup) -> types.MarkupKind:
    return types.MarkupKind.Markdown if markup.markdown else types.MarkupKind.PlainText


def _read_capabilities(caps: types.ClientCapabilities) -> tuple[bool, dict[str, Markup]]:
    """labelDetails support, and markdown where the client renders it (else the same text, plain)."""
    text = caps.text_document or types.TextDocumentClientCapabilities()
    item = (
        text.completion and text.completion.completion_item
    ) or types.ClientCompletionItemOptions()
    hover_formats = (text.hover and text.hover.content_format) or []
    markdown = types.MarkupKind.Markdown
    return bool(item.label_details_support), {
        "completion": Markup(markdown in (item.documentation_format or [])),
        "hover": Markup(markdown in hover_formats),
    }
