"""``apiprof compare BASE NEW``: which APIs cost more in NEW, with an exit code for CI gates."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from apiprof.cli.options import add_output_arguments, add_selection_arguments
from apiprof.errors import UsageError

COMPARE_DESCRIPTION = """\
Compare two profile databases API by API — two versions of a package, two machines, a user's
collected profile against the reference — and rank the APIs present in both by excess cost:
ratio of medians (and of p90) NEW/BASE with a confidence interval, and a verdict for time and
for allocation: slower/faster (allocation: more/less), no change, or too few samples.
"""

COMPARE_EPILOG = """\
how verdicts are reached:
  Slices (scenario, input size) measured in both are compared slice against slice with a
  stratified Mann–Whitney test; p-values become Benjamini–Hochberg q-values over all tests. A
  verdict needs q <= --alpha, a median ratio beyond --min-effect and an interval excluding 1.
  NEW's times are first divided by the machine-speed factor (--speed): the machine-speed index
  both databases store, else the median time ratio over all shared APIs — which also absorbs
  a change that slows every API alike; the output always says which was used.

--json prints one object: base, new {path, packages, environments, scans, machine_speed_ns};
  options; speed {used, factor, base_index_ns, new_index_ns, shared_apis_ratio, shared_apis,
  reason, description, warning}; tests; summary {time: {VERDICT: n}, alloc: {...}}; apis [{qualname,
  module, growth {base, new}, time and alloc: {metric, unit, verdict, n_base, n_new, slices,
  matched, base_median, new_median, base_p90, new_p90, excess, median_ratio {value, low, high,
  confidence}, p90_ratio, p_value, q_value, superiority} or null}] ranked; only_in_base;
  only_in_new; gate {fail_on, failing} when --fail-on is given. Times in ns (NEW normalised).

exit codes: 0 done (no --fail-on verdict found), 1 an API got a --fail-on verdict,
2 usage error, 3 database error (missing, not an apiprof file, newer schema).
"""


def effect_size(text: str) -> float:
    """``10%`` or ``0.1`` → 0.1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a percentage like 10% or a fraction like 0.1, got {text!r}"
        ) from None
    if not text.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(
            f"{text} reads as {value:.0%}; write {text}% if you meant {text} percent"
        )
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"the minimum effect must be 0 or more, got {text!r}")
    return value


def fail_on_words(text: str) -> tuple[str, ...]:
    from apiprof.analysis.compare import FAIL_ON_CHOICES

    words = tuple(word.strip() for word in text.split(",") if word.strip())
    unknown = [w for w in words if w not in FAIL_ON_CHOICES]
    if unknown or not words:
        raise argparse.ArgumentTypeError(
            f"unknown verdict {', '.join(unknown) or text!r}; choose from {', '.join(FAIL_ON_CHOICES)} (comma-separated)"
        )
    return words


def alpha_level(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (e.g. 0.05), got {text}")
    return value


def run_compare(args: argparse.Namespace) -> int:
    from apiprof.analysis.compare import FAIL_ON_CHOICES, CompareOptions, compare_databases
    from apiprof.analysis.speed import SpeedMethod
    from apiprof.db.slices import Source

    if Path(args.base).resolve() == Path(args.new).resolve():
        print("apiprof compare: note: BASE and NEW are the same file", file=sys.stderr)
    options = CompareOptions(
        alpha=args.alpha,
        min_effect=args.min_effect,
        speed=SpeedMethod(args.speed),
        source=Source(args.source),
        package=args.package,
    )
    comparison = compare_databases(args.base, args.new, options)
    if not comparison.apis:
        raise UsageError(
            f"{args.base} and {args.new} have no API in common"
            + (f" in package {args.package!r}" if args.package else "")
            + "; scan the same package into both (apiprof-scan PACKAGE --db FILE)"
        )
    gate = {verdict for word in args.fail_on for verdict in FAIL_ON_CHOICES[word]}
    failing = comparison.failing(gate) if gate else []
    if args.html:
        from apiprof.analysis.html import compare_page

        Path(args.html).write_text(compare_page(comparison), encoding="utf-8")
        print(f"wrote {args.html}", file=sys.stderr)
    if args.json:
        document = comparison.to_json()
        if args.fail_on:
            document["gate"] = {
                "fail_on": list(args.fail_on),
                "failing": [api.qualname for api in failing],
            }
        print(json.dumps(document, indent=2))
    else:
        print_comparison(comparison, every=args.all)
    if failing:
        names = ", ".join(api.qualname for api in failing[:10])
        more = f" and {len(failing) - 10} more" if len(failing) > 10 else ""
        print(
            f"apiprof compare: {len(failing)} API(s) matched --fail-on {','.join(args.fail_on)}: {names}{more}",
            file=sys.stderr,
        )
        return 1
    return 0


def print_comparison(comparison, every: bool = False) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from apiprof.analysis import display

    console = Console()
    for label, info in (("BASE", comparison.base), ("NEW", comparison.new)):
        packages = ", ".join(f"{n} {v}".strip() for n, v in info.packages.items()) or "no package"
        console.print(
            f"[bold]{label}[/bold] {escape(info.path)}: {escape(packages)}, {info.scans} scan(s)"
        )
    console.print(f"machine speed: {escape(comparison.speed.describe())}")
    if comparison.speed_warning:
        console.print(f"[yellow]warning[/yellow]: {escape(comparison.speed_warning)}")
    console.print(f"statistics: {escape(display.method_sentence(comparison))}", style="dim")
    rows = display.shown(comparison, every)
    if rows:
        confidence = f"{1 - comparison.options.alpha:.0%}"
        table = Table(title="NEW against BASE, largest excess cost first", title_justify="left")
        for column in ("API", "", "BASE", "NEW", f"ratio ({confidence} CI)", "p90", "q", "verdict"):
            left = column in ("API", "", "verdict")
            table.add_column(column, justify="left" if left else "right", overflow="fold")
        styles = {"worse": "bold red", "better": "bold blue", "few": "dim", "same": ""}
        for api in rows:
            families = list(api.families())
            for position, m in enumerate(families):
                c = display.family_cells(m)
                verdict = f"[{styles[c.tone]}]{c.verdict}[/]" if styles[c.tone] else c.verdict
                name = escape(api.qualname) if position == 0 else ""
                growth = display.growth_change(api)
                if position == len(families) - 1 and growth and "→" in growth:
                    verdict += f"\ngrowth {escape(growth)}"
                table.add_row(
                    name,
                    display.FAMILY_LABELS[m.family][:5],
                    c.base,
                    c.new,
                    c.ratio,
                    c.p90_ratio,
                    c.q,
                    verdict,
                    end_section=position == len(families) - 1,
                )
        console.print(table)
    console.print(display.counts_sentence(comparison))
    hidden = len(comparison.apis) - len(rows)
    if hidden:
        console.print(
            f"{hidden} API(s) without a change are not listed (--all lists every API)", style="dim"
        )
    for label, names in (
        ("only in BASE", comparison.only_in_base),
        ("only in NEW", comparison.only_in_new),
    ):
        if names:
            listed = ", ".join(names[:10]) + (
                f" and {len(names) - 10} more" if len(names) > 10 else ""
            )
            console.print(f"{label} ({len(names)}): {escape(listed)}")


def register(commands: argparse._SubParsersAction) -> None:
    from apiprof.analysis.compare import FAIL_ON_CHOICES
    from apiprof.analysis.speed import SpeedMethod

    parser = commands.add_parser(
        "compare",
        help="which APIs cost more in NEW than in BASE",
        description=COMPARE_DESCRIPTION,
        epilog=COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("base", metavar="BASE", help="the reference profile database")
    parser.add_argument("new", metavar="NEW", help="the profile database to check against BASE")
    add_output_arguments(parser)
    parser.add_argument(
        "--fail-on",
        type=fail_on_words,
        default=(),
        metavar="VERDICTS",
        help=f"exit 1 when an API gets one of these verdicts (comma-separated: {', '.join(FAIL_ON_CHOICES)}); "
        "e.g. --fail-on slower for a CI gate",
    )
    parser.add_argument(
        "--min-effect",
        type=effect_size,
        default=0.10,
        metavar="PCT",
        help="smallest change of the median that counts, as 10%% or 0.1 (default: 10%%)",
    )
    parser.add_argument(
        "--alpha",
        type=alpha_level,
        default=0.05,
        metavar="Q",
        help="false discovery rate over all tests; intervals are at 1 - Q (default: 0.05)",
    )
    parser.add_argument(
        "--speed",
        choices=[str(m) for m in SpeedMethod],
        default=str(SpeedMethod.AUTO),
        help="machine-speed normalisation: auto (index if both databases have one, else shared APIs), "
        "index, apis (median ratio over shared APIs), none (default: auto)",
    )
    add_selection_arguments(parser)
    parser.add_argument(
        "--all",
        action="store_true",
        help="list every API in the terminal, not only the changed ones",
    )
    parser.set_defaults(handler=run_compare)
