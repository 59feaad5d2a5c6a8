"""``sco deploy monitoring``: the PrometheusRule of deploy/kubernetes/monitoring from the one rules file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sco.errors import CliError

__all__ = ["register"]


def _monitoring(args: argparse.Namespace) -> int:
    from sco.deploy.monitoring import prometheus_rule_text

    try:
        text = prometheus_rule_text(args.rules)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


def register(subparsers: Any) -> None:
    group = subparsers.add_parser("deploy", help="generate what deploy/ installs")
    sub = group.add_subparsers(dest="deploy_command", required=True)
    p = sub.add_parser("monitoring", help="the PrometheusRule from deploy/monitoring/rules/sco-alerts.yml")
    p.add_argument("--rules", type=Path, default=Path("deploy/monitoring/rules/sco-alerts.yml"))
    p.add_argument("--out", type=Path, default=None, help="file to write (default: standard output)")
    p.set_defaults(handler=_monitoring)
