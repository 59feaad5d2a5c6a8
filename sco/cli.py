"""The ``sco`` operator CLI. One argparse tree; each command group lives in ``sco.commands.<group>`` and
exposes ``register(subparsers)``. Command modules import heavy dependencies inside their handlers, so
``sco --help`` and the contract commands start fast.

Exit codes: 0 success, 1 findings or a failed check, 2 usage or input error. Errors are one line on stderr,
never a traceback (set SCO_DEBUG=1 to see one).

Logging is set up here, once, for every command (``contracts.logsetup``): ``--log-format json|text`` and
``--log-level`` before the command, or ``SCO_LOG_FORMAT`` / ``SCO_LOG_LEVEL`` (what the manifests set).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .errors import CliError

__all__ = ["COMMAND_GROUPS", "CliError", "main"]

# Each entry is a module with ``register(subparsers) -> None``. Add a group by adding its module here.
COMMAND_GROUPS: tuple[str, ...] = (
    "sco.commands.contracts",
    "sco.commands.keys",
    "sco.commands.demo",
    "sco.commands.plugpool",
    "sco.commands.stack",  # up, down, status, db, clickhouse, ingest, outbox
    "sco.commands.sim",  # sim region serve|catalogue|stats, sim history
    "sco.commands.controller",  # controller run|rebuild
    "sco.commands.report_pages",  # report showback|fleet
    "sco.commands.simulate",  # simulate --days --strategy
    "sco.commands.drill",  # drill --partition --fraction | --game-day --hall
    "sco.commands.fallback",  # fallback approvals | approve | deny (ADR-23, ADR-30)
    "sco.commands.distributor",  # distributor serve
    "sco.commands.bakeoff",  # bakeoff run | table: the placement bake-off, one strategy-month at a time
    "sco.commands.deploy",  # deploy monitoring | render: what deploy/ installs
)


def package_version() -> str:
    """The installed distribution's version (``importlib.metadata``); ``unknown`` from a bare source tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sco")
    except PackageNotFoundError:
        return "unknown"


def component(argv: Sequence[str]) -> str:
    """The command path a log line names: ``controller-run`` for ``sco controller run --partition …``."""
    words: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in ("--log-format", "--log-level"):
            skip = True
        elif token.startswith("-"):
            if words:
                break
        elif len(words) < 2:
            words.append(token)
        else:
            break
    return "-".join(words) or "sco"


def build_parser() -> argparse.ArgumentParser:
    """The ``sco`` argument parser with every command group registered."""
    from contracts.logsetup import FORMATS, LEVELS, default_format, default_level

    parser = argparse.ArgumentParser(prog="sco", description="Spot Capacity Orchestrator")
    parser.add_argument("--version", action="version", version=f"sco {package_version()}")
    parser.add_argument("--log-format", choices=FORMATS, default=default_format(),
                        help="log lines as text or JSON (default $SCO_LOG_FORMAT or text)")
    parser.add_argument("--log-level", dest="root_log_level", choices=LEVELS, default=default_level(),
                        help="the least severe level logged (default $SCO_LOG_LEVEL or INFO)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_GROUPS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # an optional extra that is not installed
            if exc.name and exc.name.split(".")[0] == name.split(".")[0]:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``sco`` command; its exit status (a ``CliError`` printed with its code, never a traceback)."""
    from contracts.logsetup import configure

    parser = build_parser()
    args = parser.parse_args(argv)
    words = list(sys.argv[1:] if argv is None else argv)
    configure(component(words), fmt=args.log_format, level=args.root_log_level,
              partition=getattr(args, "partition", None), region=getattr(args, "region", None))
    try:
        code: int = args.handler(args)
        return code
    except CliError as exc:
        print(f"sco: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("sco: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("SCO_DEBUG"):
            raise
        print(f"sco: error: {type(exc).__name__}: {exc} (set SCO_DEBUG=1 for a traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
