"""Which functions the calls in an open document call, found without making the editor wait.

A call's target comes from the imports when they name it (``json.dumps(...)``), else from an
earlier jedi answer for that call site, else from jedi: now, for clients that cannot be told to
ask again, or on the background thread, after which the client is asked to fetch its hints
again. Call maps are kept per document version; call sites per module-level statement, so an
edit re-parses only what changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from apiprof.lsp_server.background import Background
from apiprof.lsp_server.calls import CallMap, CallSite, StatementCache, map_calls
from apiprof.lsp_server.resolve import Resolver
from apiprof.lsp_server.text import Document, Documents

log = logging.getLogger(__name__)

MAX_CACHED_TARGETS = 200_000


class CallTargets:
    """Call maps and call targets of the open documents.

    ``background`` returns the server's background worker (None until the event loop runs),
    ``can_refresh`` whether the client can be asked to fetch hints again, and ``stale`` is
    called when background answers have named new targets.
    """

    def __init__(
        self,
        documents: Documents,
        resolver: Resolver,
        *,
        background: Callable[[], Background | None],
        can_refresh: Callable[[], bool],
        stale: Callable[[], None],
    ) -> None:
        self.documents = documents
        self.resolver = resolver
        self._background, self._can_refresh, self._stale = background, can_refresh, stale
        self.generation = 0  # grows whenever background answers add targets
        self._call_maps: dict[str, tuple[int | None, CallMap]] = {}
        self._known: dict[tuple[int, int, int], tuple[str, ...]] = {}
        self._statements: StatementCache = {}  # call sites per module-level statement
        self._resolving: set[str] = set()  # documents with a background job queued or running

    def use(self, resolver: Resolver) -> None:
        """Resolve with ``resolver`` from now on; what the old one named is forgotten."""
        self.resolver = resolver
        self._known.clear()

    def forget(self, uri: str) -> None:
        self._call_maps.pop(uri, None)

    def call_map(self, doc: Document) -> CallMap:
        cached = self._call_maps.get(doc.uri)
        if cached is not None and cached[0] == doc.version and doc.version is not None:
            return cached[1]
        calls = map_calls(self.resolver.parse(doc.source, doc.path), doc.source, self._statements)
        self._call_maps[doc.uri] = (doc.version, calls)
        return calls

    def of(self, doc: Document, calls: CallMap, sites: list[CallSite]) -> list[tuple[str, ...]]:
        """Targets of the given calls (in their order); () for a call not named yet."""
        targets: list[tuple[str, ...]] = []
        unknown: list[int] = []
        known = self._known
        for index, site in enumerate(sites):
            target = calls.target(site)
            if target is not None:
                targets.append((target,))
                continue
            names = known.get(site.key)
            if names is None:
                unknown.append(index)
                names = ()
            targets.append(names)
        if unknown and self._background() is not None and self._can_refresh():
            self.resolve_in_background(doc)
        elif unknown:
            todo = [sites[i] for i in unknown]
            for index, (site, names) in zip(
                unknown, self.resolver.infer_calls(doc.source, doc.path, todo), strict=True
            ):
                self._remember(site, names)
                targets[index] = names
        return targets

    def resolve_in_background(self, doc: Document, *, calls: bool = True) -> None:
        """Parse the document (jedi's requests then find it parsed) and, with ``calls``, name
        the calls only jedi can name."""
        background = self._background()
        if background is None or doc.uri in self._resolving:
            return
        uri, version, source, path = doc.uri, doc.version, doc.source, doc.path
        known = frozenset(self._known)
        resolver, documents, statements = self.resolver, self.documents, self._statements

        def still_wanted() -> bool:
            return uri in documents and documents.get(uri).version == version

        def job() -> Callable[[], None]:
            results: dict[CallSite, tuple[str, ...]] = {}
            try:
                module = resolver.parse(source, path)
                found = map_calls(module, source, statements)
                todo = [s for s in found.sites if found.target(s) is None and s.key not in known]
                for site, names in resolver.infer_calls(source, path, todo if calls else []):
                    results[site] = names
                    if not still_wanted():
                        break
            except Exception:  # a closed document, code jedi or parso cannot take
                log.exception("resolving the calls of %s failed", uri)
            return lambda: self._resolved(uri, version, results)

        self._resolving.add(uri)
        background.submit(("calls", uri), job)

    def _resolved(
        self, uri: str, version: int | None, results: dict[CallSite, tuple[str, ...]]
    ) -> None:
        """Back on the event loop: keep the answers, and have the client ask for hints again.
        A job overtaken by an edit is followed by one for the document as it is now."""
        self._resolving.discard(uri)
        if uri in self.documents and self.documents.get(uri).version != version:
            self.resolve_in_background(self.documents.get(uri))
        for site, names in results.items():
            self._remember(site, names)
        self.generation += bool(results)
        if results:
            self._stale()

    def _remember(self, site: CallSite, names: tuple[str, ...]) -> None:
        if len(self._known) > MAX_CACHED_TARGETS:
            self._known.clear()
        self._known[site.key] = names
