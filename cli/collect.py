"""``apiprof collect enable|disable|status|purge``: opt in to in-the-wild collection and look
after what it keeps on this machine."""

from __future__ import annotations

import argparse
import json
from typing import Any

from apiprof.format import format_bytes

SETTING_OPTIONS = (
    ("--rate", "rate", "R", "fraction of candidate APIs drawn per program (default 0.05; 1 = all)"),
    (
        "--max-apis",
        "max_apis",
        "N",
        "APIs instrumented at once (default 4, no limit at rate 1; 0 = no limit)",
    ),
    (
        "--max-programs",
        "max_programs",
        "N",
        "programs collecting at once on this machine (default 6)",
    ),
    (
        "--max-load",
        "max_load",
        "L",
        "1-minute load average per CPU above which nothing is collected (default 0.75)",
    ),
    ("--budget", "budget", "F", "share of a program's time collection may cost (default 0.01)"),
    (
        "--interval",
        "interval",
        "S",
        "seconds between summaries of a long-running program (default 60)",
    ),
    (
        "--samples",
        "samples",
        "N",
        "calls measured per API before it makes room for another (default 2000)",
    ),
    ("--reference", "reference", "PATH", "reference database (default: the synced reference.db)"),
    ("--apis", "apis", "A,B", "collect only these APIs instead of the reference's entry points"),
    (
        "--upload-threshold",
        "upload_threshold",
        "BYTES",
        "spool size that starts an automatic upload (default 131072)",
    ),
    ("--server", "server", "URL", "service that automatic uploads go to"),
    ("--token", "token", "TOKEN", "upload token for that service"),
)


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    from apiprof.engine.collect.config import parse_value

    return {
        key: parse_value(key, getattr(args, key))
        for _, key, _, _ in SETTING_OPTIONS
        if getattr(args, key) is not None
    }


def print_status(data: dict[str, Any]) -> None:
    state = "on" if data["active"] else "off"
    why = "enabled" if data["enabled"] else "not enabled"
    if data["forced"]:
        why += f", APIPROF_COLLECT={data['forced']}"
    print(f"collection: {state} for new programs ({why})")
    print(f"home: {data['home']}")
    print(
        f"start-up hook: {data['hook'] or 'missing — run `apiprof collect enable` to install it'}"
    )
    config = data["config"]
    if data["reference"] is None:
        print(f"candidates: the configured list ({', '.join(config['apis'])})")
    elif data["candidates"] is None:
        print(
            f"reference: {data['reference']} (missing — run `apiprof sync --server URL` "
            "or set --reference)"
        )
    else:
        print(f"reference: {data['reference']} ({data['candidates']} entry points)")
    print(
        f"rate {config['rate']}, at most {config['max_programs']} programs, budget "
        f"{config['budget']:.1%}, load limit {config['max_load']} per CPU"
    )
    print(f"collecting now: {data['collecting_now']} program(s)")
    print(
        f"spool: {data['spool_files']} batch(es), {format_bytes(data['spool_bytes'])}"
        f" (uploads past {format_bytes(config['upload_threshold'])}"
        f"{' to ' + config['server'] if config['server'] else ', no --server set'})"
    )
    if data["rejected"]:
        print(
            f"rejected by the service: {data['rejected']} batch(es) (see `apiprof collect purge`)"
        )
    upload = data["last_upload"]
    if upload:
        print(
            f"last upload: {upload.get('sent', 0)} sent, {upload.get('duplicates', 0)} already "
            f"counted, {len(upload.get('rejected', []))} rejected to {upload.get('server')}"
        )
    cost = data["last_program"]
    if cost:
        print(
            f"last collected program: {cost['apis_measured']} API(s) measured, collection cost "
            f"{cost['share']:.2%} of its {cost['elapsed_s']:.1f} s (budget {cost['budget']:.1%})"
        )
    for problem in data["problems"]:
        print(f"warning: {problem} (ignored)")


def run_enable(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.control import enable
    from apiprof.engine.collect.paths import Layout

    status, installed = enable(Layout.current(), _changes(args))
    if installed:
        print(f"installed the start-up hook: {installed}")
    print_status(status.to_json())
    return 0


def run_disable(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.control import disable
    from apiprof.engine.collect.paths import Layout

    print_status(disable(Layout.current()).to_json())
    return 0


def run_status(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.control import collect_status
    from apiprof.engine.collect.paths import Layout

    data = collect_status(Layout.current()).to_json()
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_status(data)
    return 0


def run_purge(args: argparse.Namespace) -> int:
    from apiprof.engine.collect.paths import Layout
    from apiprof.engine.collect.spool import purge

    layout = Layout.current()
    print(f"deleted {purge(layout)} file(s) of collected data from {layout.root}")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    collect = commands.add_parser(
        "collect",
        help="opt in to measuring APIs inside your own programs",
        description="In-the-wild collection: programs started in an environment where apiprof is "
        "installed measure a random few APIs and keep summaries in a local spool for upload. "
        "Off unless enabled here or APIPROF_COLLECT=1 is set for a process.",
    )
    sub = collect.add_subparsers(dest="collect_command", required=True, metavar="COMMAND")
    enable = sub.add_parser(
        "enable",
        help="collect from every program started from now on",
        description="Turn collection on for new programs (settings are saved in the apiprof home; "
        "each can be overridden per process by its APIPROF_* environment variable).",
    )
    for option, key, metavar, text in SETTING_OPTIONS:
        enable.add_argument(option, dest=key, metavar=metavar, help=text)
    enable.set_defaults(handler=run_enable)
    disable = sub.add_parser("disable", help="stop collecting from new programs")
    disable.set_defaults(handler=run_disable)
    status = sub.add_parser("status", help="what is collected, where, and what is waiting")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.set_defaults(handler=run_status)
    purge = sub.add_parser("purge", help="delete collected data not yet uploaded (settings stay)")
    purge.set_defaults(handler=run_purge)
