"""``sco demo``: for now, the contract compiler over the example repository (issue 10 grows it into the
whole system running)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.bundle import publish
from contracts.bundle_verify import verify_bundle
from contracts.compiler import RepoError, check_repo

from ..errors import CliError
from .keys import init_keys
from .report import render_report

__all__ = ["register"]

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "contracts"


def register(sub: Any) -> None:
    demo = sub.add_parser("demo", help="run the demo on embedded defaults")
    demo.add_argument("--contracts", type=Path, default=EXAMPLES, help="contract repository")
    demo.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    try:
        result = check_repo(args.contracts)
    except RepoError as exc:
        raise CliError(str(exc)) from None
    shown = Path(os.path.relpath(args.contracts)) if args.contracts.is_absolute() else args.contracts
    print(render_report(result, shown))
    if result.errors:
        return 1
    with tempfile.TemporaryDirectory(prefix="sco-demo-") as tmp:
        keys = Path(tmp) / "keys"
        init_keys(keys)
        from contracts.signing import load_private_key

        out = Path(tmp) / "bundles"
        published = publish(result.workloads, out, load_private_key(keys / "signing.key.pem"), datetime.now(UTC),
                            load_private_key(keys / "governance.key.pem"))
        print("\nSigned bundles (throw-away demo keys):")
        for b in published:
            agent = verify_bundle(b.directory / "agent-bundle.json", keys / "signing.pub.pem")
            ctrl = verify_bundle(b.directory / "controller-bundle.json", keys / "signing.pub.pem",
                                 keys / "governance.pub.pem")
            print(f"  {b.partition}: {b.workloads} workload(s), generation {b.generation}; agent bundle "
                  f"{len(agent.raw)} B verified, controller bundle {len(ctrl.raw)} B verified "
                  f"(+ governance signature for {b.governed_changes} governed field(s))")
    sys.stdout.flush()
    return 0
