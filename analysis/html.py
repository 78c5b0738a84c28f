"""Stand-alone HTML pages for ``apiprof compare --html`` and ``apiprof report --html``.

One self-contained file each (styles inline, graphics as inline SVG), rendered from the Jinja
templates beside this module with autoescaping on: names and numbers can never break the markup.
The pages follow the reader's light or dark colour scheme.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from apiprof import __version__
from apiprof.analysis import charts, display
from apiprof.analysis.compare import ApiComparison, Comparison, MetricComparison, Verdict
from apiprof.analysis.report import Report
from apiprof.format import format_value
from apiprof.model.buckets import bucket_index
from apiprof.model.records import Metric
from apiprof.svg import bucket_colour, heat_strip_svg, histogram_svg

TEMPLATES = Path(__file__).with_name("templates")


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _render(template: str, **context: object) -> str:
    colours = {"worse": charts.WORSE_COLOUR, "better": charts.BETTER_COLOUR}
    return (
        _environment()
        .get_template(template)
        .render(version=__version__, colours=colours, **context)
    )


def _anchor(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def _packages(packages: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}".strip() for name, version in packages.items())


# -- compare -----------------------------------------------------------------------------------
def compare_page(comparison: Comparison) -> str:
    """The comparison as one HTML page: summary, ratio charts, the full table, what changed."""
    confidence = f"{1 - comparison.options.alpha:.0%}"
    sides = [
        {
            "label": label,
            "path": info.path,
            "packages": _packages(info.packages),
            "scans": info.scans,
            "environments": "; ".join(info.environments),
        }
        for label, info in (("BASE", comparison.base), ("NEW", comparison.new))
    ]
    counts = [
        {
            "label": f"{display.FAMILY_LABELS[family]} {verdict}: {n}",
            "tone": display.tone(Verdict(verdict)),
        }
        for family, by_verdict in comparison.counts().items()
        for verdict, n in by_verdict.items()
        if n or verdict == Verdict.SAME
    ]
    rows = [
        {
            "qualname": api.qualname,
            "anchor": _anchor(api.qualname),
            "changed": api.regressed or api.improved,
            "families": [display.family_cells(m) if m else None for m in (api.time, api.alloc)],
            "growth": display.growth_change(api),
        }
        for api in comparison.apis
    ]
    return _render(
        "compare.html",
        title=f"apiprof compare: {comparison.base.path} → {comparison.new.path}",
        sides=sides,
        speed=comparison.speed.describe(),
        speed_warning=comparison.speed_warning,
        method=display.method_sentence(comparison),
        counts=counts,
        confidence=confidence,
        charts=_ratio_charts(comparison),
        rows=rows,
        details=[_detail(api) for api in display.shown(comparison, every=False)],
        only=[
            {"side": "base", "label": "BASE", "names": comparison.only_in_base},
            {"side": "new", "label": "NEW", "names": comparison.only_in_new},
        ],
    )


def _ratio_charts(comparison: Comparison) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for family, heading in (("time", "Time: NEW / BASE"), ("alloc", "Allocation: NEW / BASE")):
        compared = [(api, m) for api in comparison.apis if (m := getattr(api, family)) is not None]
        if not compared:
            continue
        shown = _chart_selection(compared)
        rows = [_ratio_row(api, m) for api, m in compared if api.qualname in shown]
        svg = charts.ratio_chart_svg(
            rows, min_effect=comparison.options.min_effect, title=f"{heading}, one row per API"
        )
        left_out = len(compared) - len(rows)
        note = f"{left_out} more APIs without a change are in the table below." if left_out else ""
        out.append({"family": family, "heading": heading, "svg": Markup(svg), "left_out": note})
    return out


CHART_ROWS = 60
"""Rows a ratio chart shows at most besides the changed APIs: the largest changes first."""


def _chart_selection(compared: list[tuple[ApiComparison, MetricComparison]]) -> set[str]:
    """Every API with a verdict, then the unchanged ones whose ratio strays furthest from 1."""
    changed = {
        api.qualname for api, m in compared if m.verdict.is_regression or m.verdict.is_improvement
    }
    unchanged = sorted(
        (pair for pair in compared if pair[0].qualname not in changed),
        key=lambda pair: -abs(pair[1].log_ratio),
    )
    room = max(0, CHART_ROWS - len(changed))
    return changed | {api.qualname for api, _ in unchanged[:room]}


def _ratio_row(api: ApiComparison, m: MetricComparison) -> charts.RatioRow:
    ratio = m.median_ratio
    if ratio is None or m.verdict is Verdict.TOO_FEW:
        return charts.RatioRow(api.qualname, 1.0, 1.0, 1.0, "none")
    return charts.RatioRow(
        api.qualname,
        ratio.value,
        ratio.low,
        ratio.high,
        display.tone(m.verdict),
        f"{api.qualname}: {display.format_ratio(ratio)}, {display.verdict_text(m.verdict)}",
    )


def _detail(api: ApiComparison) -> dict[str, object]:
    figures = []
    for m in api.families():
        cells = display.family_cells(m)
        svg = charts.paired_histogram_svg(
            m.base.counts(),
            m.new.counts(),
            m.metric,
            title=f"{api.qualname}: {m.metric.label}, BASE above, NEW below",
            markers=(m.base_median, m.new_median),
        )
        figures.append(
            {
                "family": m.family,
                "svg": Markup(svg),
                "caption": f"{m.metric.label}: {cells.change}, {cells.ratio}, p90 {cells.p90_ratio}, "
                f"q {cells.q} — {cells.verdict} ({cells.samples} samples)",
            }
        )
    return {
        "qualname": api.qualname,
        "anchor": _anchor(api.qualname),
        "figures": figures,
        "growth": display.growth_change(api),
    }


# -- report ------------------------------------------------------------------------------------
CAVEAT = (
    "Times are inclusive: an API that calls another API of the package carries that time too, "
    "so module totals overlap. Lab totals follow the scenarios that were run; collected totals "
    "follow what real programs called."
)


def report_page(report: Report) -> str:
    """The module report as one HTML page: totals chart, module table, a section per module."""
    metric = Metric.WALL
    modules = []
    for module in report.modules:
        time = module.time
        medians = module.api_medians
        modules.append(
            {
                "name": module.name,
                "anchor": _anchor(module.name),
                "apis": len(module.apis),
                "profiled": len(module.profiled),
                "samples": time.count,
                "total": format_value(metric, module.total_ns),
                "median": display.hist_stat(metric, time, 50),
                "p90": display.hist_stat(metric, time, 90),
                "alloc": display.hist_stat(Metric.ALLOC_INCL, module.alloc, 50),
                "growth": display.growth_summary(module),
                "strip": Markup(
                    heat_strip_svg(time.counts(), metric, title=f"{module.name}: calls by cost")
                ),
                "calls_svg": Markup(
                    histogram_svg(
                        time.counts(),
                        metric,
                        title=f"{module.name}: time per call",
                        marker=time.median if time else None,
                        width=300,
                        height=90,
                    )
                ),
                "apis_svg": Markup(
                    histogram_svg(
                        medians.counts(),
                        metric,
                        title=f"{module.name}: median time per API",
                        width=300,
                        height=90,
                    )
                ),
                "alloc_svg": Markup(
                    histogram_svg(
                        module.alloc.counts(),
                        Metric.ALLOC_INCL,
                        title=f"{module.name}: allocated per call",
                        width=300,
                        height=90,
                    )
                )
                if module.alloc
                else "",
                "top": [
                    {
                        "qualname": api.qualname,
                        "median": display.api_median(api),
                        "p90": display.hist_stat(api.time_metric or metric, api.time, 90),
                        "alloc": display.hist_stat(Metric.ALLOC_INCL, api.alloc, 50),
                        "growth": api.growth,
                        "samples": api.time.count if api.time else 0,
                        "strip": Markup(
                            heat_strip_svg(
                                api.time.counts(), metric, title=f"{api.qualname}: calls by cost"
                            )
                        )
                        if api.time
                        else "",
                    }
                    for api in module.top(report.options.top)
                ],
            }
        )
    bars = [
        charts.Bar(
            module.name,
            module.total_ns,
            bucket_colour(metric, bucket_index(module.time.median))
            if module.time
            else "currentColor",
            f"{module.name}: {format_value(metric, module.total_ns)} measured over {module.time.count} calls",
        )
        for module in report.modules
    ]
    return _render(
        "report.html",
        title=f"apiprof report: {report.database.path}",
        database={
            "path": report.database.path,
            "packages": _packages(report.database.packages),
            "environments": "; ".join(report.database.environments),
        },
        source=str(report.options.source),
        caveat=CAVEAT,
        totals_svg=Markup(charts.bar_chart_svg(bars, metric, title="Time measured per module")),
        modules=modules,
    )
