"""Where drill-down pages live, shared by the summary links and the page generator."""

from __future__ import annotations

PAGES_DIR = "apiprof"
INDEX_PAGE = f"{PAGES_DIR}/index"
PAGE_BUILDERS = frozenset({"html", "dirhtml"})


def page_name(qualname: str) -> str:
    """Page name (no suffix) of an API's drill-down page: ``apiprof/json.dumps``."""
    return f"{PAGES_DIR}/{qualname}"


def pages_enabled(builder) -> bool:
    return builder.name in PAGE_BUILDERS and builder.config.apiprof_pages != "none"
