"""List the benchmarks (each runs on its own: `python -m bench.<name>`)."""

from __future__ import annotations

import pkgutil
from pathlib import Path

for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
    if not info.name.startswith("_") and info.name != "catalogue":
        print(f"python -m bench.{info.name}")
