"""Text the editor shows: one-word hints, concise cost lines, and the full profile.

Numbers are formatted by :mod:`apiprof.format` only, so the editor and the Sphinx pages agree
on how "3.2 µs" looks. The layout is lines, not tables: it reads the same whether a client
renders the markdown (VS Code), shows it nearly raw (Neovim) or asked for plain text. Every name
and sentence read from a database is untrusted: control characters are flattened, and in
markdown names go into code spans and prose is escaped, so a hostile database cannot inject
links, HTML or layout.
"""

from __future__ import annotations

import re

from apiprof.format import format_bytes, format_ns, sparkline, text_histogram, worth_showing
from apiprof.lsp_server.config import ServerConfig
from apiprof.lsp_server.profiles import CostProfile, Figures
from apiprof.model.records import NO_SIZE

MAX_TEXT = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]<>&|~])")
_MARKDOWN_BLOCK_START = re.compile(r"^([#+=>-])|^(\d+)([.)])")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


class Markup:
    """Markdown or plain text, chosen by what the client said it renders."""

    def __init__(self, markdown: bool) -> None:
        self.markdown = markdown

    def text(self, untrusted: str) -> str:
        """Prose from a database: one line, bounded, escaped for markdown."""
        flat = clean(untrusted)
        if not self.markdown:
            return flat
        escaped = _MARKDOWN_INLINE.sub(r"\\\1", flat)
        # a list marker or heading at the start would make the line a block
        return _MARKDOWN_BLOCK_START.sub(
            lambda m: m.expand(r"\\\1" if m[1] else r"\2\\\3"), escaped
        )

    def code(self, untrusted: str) -> str:
        """A name from a database, as inline code."""
        flat = clean(untrusted)
        if not self.markdown:
            return flat
        fence = "`" * (max((len(r) for r in re.findall("`+", flat)), default=0) + 1)
        pad = " " if flat.startswith("`") or flat.endswith("`") else ""
        return f"{fence}{pad}{flat}{pad}{fence}"

    def bold(self, ours: str) -> str:
        return f"**{ours}**" if self.markdown else ours

    def link(self, title: str, url: str) -> str:
        return f"[{title}](<{url}>)" if self.markdown else f"{title}: {url}"

    def lines(self, lines: list[str]) -> str:
        """Lines that stay lines: a markdown hard break, or a plain newline."""
        return ("  \n" if self.markdown else "\n").join(line for line in lines if line)

    def block(self, ours: list[str]) -> str:
        return "```text\n" + "\n".join(ours) + "\n```" if self.markdown else "\n".join(ours)


def clean(untrusted: str) -> str:
    flat = _CONTROL.sub(" ", untrusted or "").strip()
    return flat if len(flat) <= MAX_TEXT else flat[: MAX_TEXT - 1] + "…"


def first_sentence(summary: str) -> str:
    """Docstring summaries are stored as a first *line*, which may stop mid-sentence
    ("Object for wrapping/filling text.  The public interface consists of"): keep whole
    sentences only, or mark the cut."""
    text = clean(summary)
    if not text or text.endswith((".", "!", "?", ":")):
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return text[: ends[-1]] if ends else text + "…"


# -- one-word hints -------------------------------------------------------------------------------


def short_hint(profile: CostProfile | None) -> str | None:
    """``"≈3.2 µs · 1.1 KiB"`` for a profiled API (completion items), None otherwise."""
    figures = profile.headline if profile else None
    if figures is None:
        return None
    parts = []
    if figures.time_ns is not None:
        parts.append(f"≈{format_ns(figures.time_ns)}")
    if figures.alloc_bytes is not None:
        parts.append(format_bytes(figures.alloc_bytes))
    return " · ".join(parts)


def call_hint(profile: CostProfile | None) -> str | None:
    """``"≈59 µs"`` after a call (its allocation when no time was measured)."""
    figures = profile.headline if profile else None
    if figures is None:
        return None
    if figures.time_ns is not None:
        return f"≈{format_ns(figures.time_ns)}"
    return f"≈{format_bytes(figures.alloc_bytes)}"


# -- concise cost lines ---------------------------------------------------------------------------


def _at_size(profile: CostProfile, size: int, markup: Markup) -> str:
    return f"{markup.text(profile.size_axis)} = {size:,}"


def _figures_text(profile: CostProfile, figures: Figures, markup: Markup) -> str:
    parts = []
    if figures.time is not None:
        time = (
            f"≈{format_ns(figures.time_ns)} typical, p90 {format_ns(figures.time.percentile(90))}"
        )
        if figures.size != NO_SIZE:
            time += f" at {_at_size(profile, figures.size, markup)}"
        parts.append(time)
    if figures.alloc is not None:
        parts.append(f"allocates {format_bytes(figures.alloc_bytes)}")
    parts += [
        f"{metric.label} {format_bytes(hist.median)}"
        for metric, hist in figures.io
        if worth_showing(metric, hist)
    ]
    text = " · ".join(parts)
    if figures.collected:
        calls = figures.samples
        text += f" ({calls:,} call{'s' if calls != 1 else ''})"
    return text


def _growth_line(profile: CostProfile, markup: Markup) -> str:
    growth = profile.summary.growth
    by_size = profile.time_by_size()
    if growth is None and len(by_size) < 2:
        return ""
    line = "Grows"
    if growth is not None:
        line += f" {markup.text(growth.growth_class)} in {markup.text(profile.size_axis)}"
    if len(by_size) >= 2:
        (small, t_small), (large, t_large) = by_size[0], by_size[-1]
        line += (
            f": {format_ns(t_small)} at {_at_size(profile, small, markup)} → "
            f"{format_ns(t_large)} at {_at_size(profile, large, markup)}"
        )
    return line


def cost_lines(profile: CostProfile, config: ServerConfig, markup: Markup) -> list[str]:
    """Two to four short lines: typical figures (at a stated size), growth, figures from real
    programs when a database has them, and where the full profile is."""
    name = markup.code(profile.qualname)
    lab, collected = profile.lab, profile.collected
    lines = []
    if lab is not None:
        where = " in the lab:" if collected is not None else " costs"
        lines.append(f"{name}{where} {_figures_text(profile, lab, markup)}")
    lines.append(_growth_line(profile, markup))
    if collected is not None:
        lead = "In real programs:" if lab is not None else f"{name} in real programs:"
        lines.append(f"{lead} {_figures_text(profile, collected, markup)}")
    lines.append(more_line(profile, config, markup))
    return [line for line in lines if line]


def more_line(profile: CostProfile, config: ServerConfig, markup: Markup) -> str:
    samples = profile.headline.samples if profile.headline else 0
    title = f"Full profile ({samples:,} samples)" if samples else "Full profile"
    link = config.docs_link(profile.qualname)
    if link:
        return markup.link(title, link)
    return f"{title}: {markup.code('apiprof show ' + profile.qualname)}"


def hover_text(profile: CostProfile, config: ServerConfig, markup: Markup) -> str | None:
    """Companion mode: the cost section only (the Python server beside us shows signature and
    docs). Standalone: the full profile."""
    if not config.companion:
        return full_profile(profile, config, markup)
    if not profile.profiled:
        return None
    return markup.lines(cost_lines(profile, config, markup))


# -- the full profile -----------------------------------------------------------------------------


def full_profile(profile: CostProfile, config: ServerConfig, markup: Markup) -> str:
    """Heading, summary, the concise lines and the histogram (completion documentation, and
    hovers in standalone mode)."""
    summary = profile.summary
    parts = [markup.code(profile.qualname + clean(summary.signature))]
    if summary.summary:
        parts.append(markup.text(first_sentence(summary.summary)))
    if profile.profiled:
        parts.append(markup.lines(cost_lines(profile, config, markup)))
        parts.append(_histogram_block(profile, config, markup))
    else:
        parts.append(_not_profiled_reason(profile, markup))
    return "\n\n".join(p for p in parts if p)


def _not_profiled_reason(profile: CostProfile, markup: Markup) -> str:
    summary = profile.summary
    if summary.coverage and summary.coverage != "profiled":
        reason = f": {markup.text(summary.reason)}" if summary.reason else ""
        return f"Not profiled ({markup.text(summary.coverage.replace('_', ' '))}{reason})"
    return "Not profiled (scanned, but no measurements stored yet)"


def _histogram_block(profile: CostProfile, config: ServerConfig, markup: Markup) -> str:
    figures = profile.headline
    if figures is None:
        return ""
    hist, metric = figures.time, figures.time_metric
    if hist is None or metric is None:
        return ""
    where = (
        f" at {_at_size(profile, figures.size, Markup(False))}" if figures.size != NO_SIZE else ""
    )
    if config.hover.histogram == "sparkline":
        lines = [f"{metric.label}{where}: {sparkline(hist)}"]
    else:
        lines = [
            f"{metric.label} per call{where}",
            *text_histogram(hist, metric, width=config.hover.histogram_width),
        ]
    return markup.block(lines)
