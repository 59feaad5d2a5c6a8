"""The command line every bench shares: ``python -m bench.X --help`` prints the module's docstring and exits
before anything is measured or started."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """An argument parser named ``python -m <module>`` whose help is the bench's docstring, verbatim."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def no_arguments(module: str, doc: str | None, argv: Sequence[str] | None = None) -> None:
    """Parse a bench's command line that takes no arguments: ``--help`` answers and exits, anything else is an
    error with argparse's usage line."""
    parser(module, doc).parse_args(argv)
