"""``.. apiprof:: package.module.function`` — the cost summary of one API, where you put it.

Options: ``:metrics: time, alloc_incl_bytes`` (default: ``apiprof_metrics``), ``:compact:`` for
the one-line form, ``:full:`` (the default) for the card with histograms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from apiprof.sphinx_ext.nodes import make_summary
from apiprof.sphinx_ext.views import KNOWN_METRICS

logger = logging.getLogger(__name__)


def parse_metrics(value: str | list[str], location: Any) -> list[str]:
    """Metric names from an option or config value; unknown names are dropped with a warning."""
    names = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in KNOWN_METRICS]
    if unknown:
        logger.warning(
            "apiprof: unknown metric(s) %s; use any of %s",
            ", ".join(unknown),
            ", ".join(sorted(KNOWN_METRICS)),
            type="apiprof",
            subtype="config",
            location=location,
        )
    return [n for n in names if n in KNOWN_METRICS]


class ApiprofDirective(SphinxDirective):
    required_arguments = 1
    has_content = False
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = {
        "metrics": directives.unchanged,
        "compact": directives.flag,
        "full": directives.flag,
    }

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0].strip()
        location = self.get_location()
        metrics = parse_metrics(
            self.options.get("metrics") or self.config.apiprof_metrics, location
        )
        anchor = nodes.make_id(f"apiprof-{name}")
        if anchor in self.state.document.ids:
            anchor = ""
        node = make_summary(
            self.env,
            name,
            metrics=metrics,
            compact="compact" in self.options and "full" not in self.options,
            target=anchor,
            location=location,
            typed=True,
        )
        if anchor:
            node["anchor"] = anchor
            node["ids"].append(anchor)
            self.state.document.ids[anchor] = node
        self.set_source_info(node)
        return [node]
