"""``sco contracts check | report | compile | verify``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.alerting import ROUTES_FILE, AlertRoutingError, render_routes
from contracts.bundle import GovernanceError, publish
from contracts.bundle_verify import BundleError, verify_bundle
from contracts.compiler import CompileResult, RepoError, check_repo
from contracts.findings import Severity
from contracts.signing import KeyError_, load_private_key

from ..errors import CliError
from .keys import DEFAULT_KEY_DIR
from .report import render_report

__all__ = ["DEFAULT_ALERT_WEBHOOK", "register"]

DEFAULT_ALERT_WEBHOOK = "http://incident-platform.invalid/alertmanager"


def register(sub: Any) -> None:
    """Add ``sco contracts`` (check, compile, sign, verify, ...) to the parser."""
    group = sub.add_parser("contracts", help="check, compile, sign and verify interruption contracts")
    cmds = group.add_subparsers(dest="contracts_command", metavar="SUBCOMMAND")
    cmds.required = True

    def repo_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("repo", type=Path, help="contract repository (e.g. deploy/contracts)")
        p.add_argument("--catalogue", type=Path, help="pool catalogue CSV (default: <repo>/pools.csv)")
        p.add_argument("--settings", type=Path, help="compiler settings YAML (default: <repo>/compiler.yaml)")

    check = cmds.add_parser("check", help="validate and run the feasibility rules; exit 0 clean, 1 findings, 2 usage")
    repo_args(check)
    check.add_argument("--strict", action="store_true", help="warnings fail too")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(handler=_check)

    report = cmds.add_parser("report", help="the compiler report: every workload with its derived figures and its "
                                            "replay over the pool history in ClickHouse (ADR-03)")
    repo_args(report)
    report.add_argument("--no-replay", action="store_true", help="the compiler's figures only, no replay")
    report.add_argument("--replay-days", type=float, default=30.0, help="days of history to replay (default 30)")
    report.add_argument("--warmup-days", type=float, default=7.0,
                        help="history before them the rankings learn from (default 7)")
    report.add_argument("--units", type=int, default=40, help="units each workload claims in the replay (40)")
    report.add_argument("--replay-engine", choices=("controller", "model"), default="controller",
                        help="controller (default): the production controller over the history, on an embedded "
                             "PostgreSQL (about half a minute a replayed day); model: the replay-only model, "
                             "seconds, a comparison of workloads and not a forecast")
    report.add_argument("--clickhouse", default=None,
                        help="ClickHouse URL with the pool history (default SCO_CLICKHOUSE_URL / the stack's "
                             "read-only reports user)")
    report.set_defaults(handler=_report)

    comp = cmds.add_parser("compile", help="compile and write signed agent and controller bundles per partition")
    repo_args(comp)
    comp.add_argument("--out", type=Path, required=True, help="output directory (bundles per <region>/<cluster>)")
    comp.add_argument("--key", type=Path, default=DEFAULT_KEY_DIR / "signing.key.pem", help="bundle signing key")
    comp.add_argument("--governance-key", type=Path, help="governance signing key (needed when governed fields change)")
    comp.add_argument("--previous", type=Path, help="previously published bundles (default: --out)")
    comp.add_argument("--alert-webhook", default=os.environ.get("SCO_ALERT_WEBHOOK", DEFAULT_ALERT_WEBHOOK),
                      help="the incident platform's Alertmanager webhook base for the generated "
                           f"{ROUTES_FILE} (default $SCO_ALERT_WEBHOOK, else {DEFAULT_ALERT_WEBHOOK}, "
                           "which reaches no one)")
    comp.set_defaults(handler=_compile)

    ver = cmds.add_parser("verify", help="verify a bundle's signature(s), and with --previous its succession; "
                                         "exit 0 valid, 1 refused")
    ver.add_argument("bundle", type=Path)
    ver.add_argument("--key", type=Path, required=True, help="bundle signing public key (PEM)")
    ver.add_argument("--governance-key", type=Path, help="governance public key (PEM)")
    ver.add_argument("--previous", type=Path,
                     help="the bundle published before it: refuse an older generation or another partition's "
                          "bundle, and recompute the governed changes against it")
    ver.set_defaults(handler=_verify)

    from .admission import register_sync_admission  # sco contracts sync-admission

    register_sync_admission(cmds)


def _load(args: argparse.Namespace) -> CompileResult:
    try:
        return check_repo(args.repo, args.catalogue, args.settings)
    except RepoError as exc:
        raise CliError(str(exc)) from None


def _summary(result: CompileResult) -> str:
    infos = sum(1 for f in result.findings if f.severity is Severity.INFO)
    return (f"{result.files} contract file(s): {len(result.workloads)} compiled, "
            f"{result.files - len(result.workloads)} refused; {len(result.errors)} error(s), "
            f"{len(result.warnings)} warning(s), {infos} note(s)")


def _check(args: argparse.Namespace) -> int:
    result = _load(args)
    if not result.files:  # nothing checked is no pass: a wrong path or an emptied repository must not read as clean
        raise CliError(f"REPO003: no contract files in {args.repo} (*.yaml or *.yml, outside dot-directories); "
                       "pass the contract repository (e.g. deploy/contracts) or add the workloads' contracts.")
    failing = bool(result.errors) or (args.strict and bool(result.warnings))
    if args.format == "json":
        print(json.dumps({"ok": not failing, "files": result.files,
                          "compiled": [w.contract.ref for w in result.workloads],
                          "findings": [f.as_dict() for f in result.findings]}, indent=2))
    else:
        for finding in result.findings:
            print(finding.render())
        print(_summary(result))
    return 1 if failing else 0


def _report(args: argparse.Namespace) -> int:
    result = _load(args)
    print(render_report(result, args.repo))
    if not args.no_replay and result.workloads:
        print()
        print(_replay(args, [w.contract for w in result.workloads]))
    return 1 if result.errors else 0


def _replay(args: argparse.Namespace, contracts: list[Any]) -> str:
    """Each region's workloads replayed over that region's history (``contracts_replay``)."""
    if not 0 < args.replay_days <= 400 or args.warmup_days < 0 or args.units < 1:
        raise CliError(f"--replay-days must be in (0, 400], --warmup-days >= 0 and --units >= 1; got "
                       f"{args.replay_days:g}, {args.warmup_days:g}, {args.units}")
    from stores import clickhouse
    from stores.config import StoreNotConfigured, resolve_url

    from .contracts_replay import (
        ReplayWindow,
        read_trace,
        render_replay,
        replay_contracts,
        replay_contracts_through_controller,
    )
    from .simulate import CPU_S_PER_DAY, progress_bar

    try:
        client = clickhouse.client(resolve_url("clickhouse", args.clickhouse, component="reports"))
    except StoreNotConfigured as exc:
        raise CliError(f"RPL001: no ClickHouse with the pool history to replay: {exc}; or pass --no-replay") \
            from None
    except Exception as exc:  # refused, bad credentials
        raise CliError(f"RPL002: cannot reach ClickHouse for the replay: {str(exc).strip()[:300]}; check "
                       "--clickhouse (or pass --no-replay)") from None
    out = []
    try:
        for region in sorted({c.partition.split("/")[0] for c in contracts}):
            mine = [c for c in contracts if c.partition.split("/")[0] == region]
            trace = read_trace(client, ReplayWindow(region, args.replay_days, args.warmup_days))
            ranking = ""
            if args.replay_engine == "model":
                outcomes, notes = replay_contracts(trace, mine, args.units)
            else:
                minutes = CPU_S_PER_DAY * args.replay_days / 60
                print(f"replaying {args.replay_days:g} days of {region}'s history through the production "
                      f"controller: about {max(minutes, 1):.0f} min on an idle core (--replay-engine model: "
                      "seconds, not a forecast)", file=sys.stderr)
                outcomes, notes, ranking = replay_contracts_through_controller(trace, mine, args.units,
                                                                               progress_bar(f"replay {region}"))
                print(file=sys.stderr)
            out.append(render_replay(trace, outcomes, notes, args.replay_engine, ranking))
    finally:
        client.close()
    return "\n\n".join(out)


def _compile(args: argparse.Namespace) -> int:
    result = _load(args)
    for finding in result.findings:
        print(finding.render(), file=sys.stderr)
    if result.errors:
        print(f"sco: compile refused: {_summary(result)}; nothing was written", file=sys.stderr)
        return 1
    try:
        routes = render_routes((w.contract for w in result.workloads), args.alert_webhook)
    except AlertRoutingError as exc:
        raise CliError(f"--alert-webhook: {exc}") from None
    try:
        key = load_private_key(args.key)
        gov = load_private_key(args.governance_key) if args.governance_key else None
    except KeyError_ as exc:
        raise CliError(str(exc)) from None
    try:
        published = publish(result.workloads, args.out, key, datetime.now(UTC), gov, args.previous)
    except (GovernanceError, BundleError) as exc:
        raise CliError(str(exc), code=1) from None
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / ROUTES_FILE).write_text(routes)
    for b in published:
        state = "unchanged" if b.unchanged else f"generation {b.generation}"
        gov_note = f", {b.governed_changes} governed change(s) countersigned" if b.governed_changes else ""
        print(f"{b.partition}: {b.workloads} workload(s), {state}{gov_note} -> {b.directory}")
    print(f"alert routes (owner and approver by contract) -> {args.out / ROUTES_FILE}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    try:
        bundle = verify_bundle(args.bundle, args.key, args.governance_key, args.previous)
    except BundleError as exc:
        print(f"REFUSED {args.bundle}: {exc}")
        return 1
    extra = ", governance signature verified" if bundle.governance_verified else ""
    if args.previous is not None:
        extra += f", follows {args.previous}"
    print(f"OK {args.bundle}: {bundle.kind} {bundle.payload.get('partition')} generation {bundle.generation}, "
          f"{len(bundle.payload.get('workloads', {}))} workload(s){extra}")
    return 0
