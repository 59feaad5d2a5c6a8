"""``sco demo`` (``make demo``): the whole system on embedded defaults (``sco.demo.runner``, docs/demo.md).
``--contracts-only`` prints the compiler report for the example repository and signs its bundles, in a second."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.bundle import publish
from contracts.bundle_verify import verify_bundle
from contracts.bundle_wire import AGENT_BUNDLE, CONTROLLER_BUNDLE
from contracts.compiler import RepoError, check_repo

from ..errors import CliError
from .keys import init_keys
from .report import render_report

__all__ = ["register"]

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "contracts"


def register(sub: Any) -> None:
    """Add ``sco demo`` to the parser."""
    demo = sub.add_parser("demo", help="run the whole system on embedded defaults (a few minutes)")
    demo.add_argument("--contracts", type=Path, default=EXAMPLES, help="contract repository")
    demo.add_argument("--contracts-only", action="store_true", help="only compile, report and sign the contracts")
    demo.add_argument("--live", type=float, default=150.0, help="seconds of the live timeline (default 150)")
    demo.add_argument("--home", type=Path, default=Path(os.environ.get("SCO_DEMO_HOME", ".sco/demo")),
                      help="where the demo keeps its stack, keys and run logs (default .sco/demo)")
    demo.add_argument("--reports", type=Path, default=Path("demo-reports"), help="where the reports go")
    demo.add_argument("--no-slurm", action="store_true", help="do not use the Slurm test bed even when it is up")
    demo.add_argument("--userdata-agents", type=int, default=3, metavar="N",
                      help="how many simulated Kubernetes nodes at a time run a real sco-agent process booted from "
                           "the controller's rendered user-data (default 3; 0: none)")
    demo.set_defaults(handler=_demo)


async def _until_sigterm(run: Coroutine[Any, Any, int]) -> int:
    """Run the demo; SIGTERM cancels it like Ctrl-C does, so it stops what it started before exiting."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await run
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def _demo(args: argparse.Namespace) -> int:
    try:
        result = check_repo(args.contracts)
    except RepoError as exc:
        raise CliError(str(exc)) from None
    if not result.files:  # a demo with no workload would place nothing and pass nothing
        raise CliError(f"REPO003: no contract files in {args.contracts} (*.yaml or *.yml, outside dot-directories); "
                       "pass --contracts deploy/contracts or add the workloads' contracts.")
    shown = Path(os.path.relpath(args.contracts)) if args.contracts.is_absolute() else args.contracts
    print(render_report(result, shown))
    if result.errors:
        return 1
    if not args.contracts_only:
        if args.userdata_agents < 0:
            raise CliError(f"--userdata-agents must be 0 or more, got {args.userdata_agents}")
        if args.live < 30:
            raise CliError(f"--live must be at least 30 seconds for the timeline to fit, got {args.live:g}")
        from sco.demo.runner import DemoConfig, run_demo

        print()
        try:
            return asyncio.run(_until_sigterm(run_demo(DemoConfig(
                home=args.home, contracts=args.contracts, reports=args.reports, live_s=args.live,
                slurm=not args.no_slurm, userdata_agents=args.userdata_agents))))
        except asyncio.CancelledError:
            return 128 + signal.SIGTERM
    with tempfile.TemporaryDirectory(prefix="sco-demo-") as tmp:
        keys = Path(tmp) / "keys"
        init_keys(keys)
        from contracts.signing import load_private_key

        out = Path(tmp) / "bundles"
        published = publish(result.workloads, out, load_private_key(keys / "signing.key.pem"), datetime.now(UTC),
                            load_private_key(keys / "governance.key.pem"))
        print("\nSigned bundles (throw-away demo keys):")
        for b in published:
            agent = verify_bundle(b.directory / AGENT_BUNDLE, keys / "signing.pub.pem")
            ctrl = verify_bundle(b.directory / CONTROLLER_BUNDLE, keys / "signing.pub.pem",
                                 keys / "governance.pub.pem")
            print(f"  {b.partition}: {b.workloads} workload(s), generation {b.generation}; agent bundle "
                  f"{len(agent.raw)} B verified, controller bundle {len(ctrl.raw)} B verified "
                  f"(+ governance signature for {b.governed_changes} governed field(s))")
    sys.stdout.flush()
    return 0
