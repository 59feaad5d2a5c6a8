"""``sco distributor serve``: each partition's signed agent and controller bundles over HTTP, with ETags,
behind the stack's credentials (controllers/distributor, docs/agent.md "Sources")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sco.cli import CliError

__all__ = ["register"]


def _serve(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from controllers.distributor import Catalog, Distributor
    from sco.stack.distributor_auth import stack_authenticator

    if not args.bundles.is_dir():
        raise CliError(f"--bundles {args.bundles} is not a directory: give the output of `sco contracts compile --out`")
    try:
        auth = stack_authenticator(args.home)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from exc
    catalog = Catalog(args.bundles)
    if not catalog.partitions():
        raise CliError(f"--bundles {args.bundles} holds no <region>/<cluster>/agent-bundle.json: compile first")

    async def main() -> None:
        server = Distributor(catalog, auth)
        port = await server.start(args.host, args.port)
        print(f"distributor on http://{args.host}:{port}/ serving {', '.join(catalog.partitions())}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(main())
    return 0


def register(subparsers: Any) -> None:
    group = subparsers.add_parser("distributor", help="the bundle distributor (serve signed bundles over HTTP)")
    sub = group.add_subparsers(dest="distributor_command", required=True)
    p = sub.add_parser("serve", help="serve <bundles>/<region>/<cluster>/*-bundle.json with ETags, authenticated")
    p.add_argument("--bundles", type=Path, required=True, help="the output directory of `sco contracts compile`")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8088, help="listen port (default 8088; 0 picks a free one)")
    p.add_argument("--home", type=Path, default=None,
                   help="the stack whose credentials admit agents and the controller (default $SCO_HOME)")
    p.set_defaults(handler=_serve)
