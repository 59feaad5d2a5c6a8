"""List the benchmarks (each runs on its own: `python -m bench.<name>`)."""

from __future__ import annotations

import pkgutil
from pathlib import Path

HERE = Path(__file__).parent


def commands() -> list[str]:
    """The bench modules that run as a command (``if __name__ == "__main__"``); the rest are their helpers."""
    return [info.name for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda m: m.name)
            if not info.name.startswith("_") and 'if __name__ == "__main__":' in (HERE / f"{info.name}.py").read_text()]


if __name__ == "__main__":
    for name in commands():
        print(f"python -m bench.{name}")
