"""Count the public functions and methods of each package that have a docstring (``testkit.docstrings`` says
which count as public).

    python scripts/docstring_counts.py [PACKAGE ...]     # default: controllers orchestration sco workload distributor
    python scripts/docstring_counts.py --missing sco     # list what has none, file:line name
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a file, sys.path starts at scripts/: the checkout's testkit is wanted
    sys.path.insert(0, str(REPO))

from testkit.docstrings import DEFAULT, modules, public_functions  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Print ``package: documented/public (percent)`` per package; with ``--missing``, each undocumented one."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", default=list(DEFAULT))
    parser.add_argument("--missing", action="store_true", help="list the public functions without a docstring")
    args = parser.parse_args(argv)
    for package in args.packages:
        total = documented = 0
        for path in modules(package, REPO):
            for line, name, has in public_functions(path):
                total += 1
                documented += has
                if args.missing and not has:
                    print(f"{path.relative_to(REPO)}:{line} {name}")
        share = documented / total * 100 if total else 100.0
        print(f"{package}: {documented}/{total} ({share:.0f} %)", file=sys.stderr if args.missing else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
