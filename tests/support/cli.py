"""Running ``sco`` as a user would, in-process: ``sco.cli.main(argv)`` with its output captured.

Spawning ``python -m sco`` costs about a second of imports per call; the CLI's behaviour (exit codes, what it
prints) is the same in-process. A few subprocess smoke tests (``sco_process``) keep the entry point honest.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sco.cli import main

__all__ = ["Result", "sco", "sco_process"]


@dataclass(frozen=True)
class Result:
    """What a shell would see: the exit code and the two streams."""

    returncode: int
    stdout: str
    stderr: str


def sco(*args: str, cwd: Path | None = None) -> Result:
    """``sco ARGS`` in this process (from ``cwd`` when given); a usage error's ``SystemExit`` becomes its code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help exits 0, a usage error 2
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return Result(code, out.getvalue(), err.getvalue())


def sco_process(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m sco ARGS`` in a child process: for the smoke tests of the real entry point."""
    return subprocess.run([sys.executable, "-m", "sco", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout)
