"""The demo's processes do not outlive it: a process it started gets SIGTERM when the demo dies, even by
SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testkit.paths import REPO

# The sleeper outlives the 60 s wait below by far: one that ended by itself would pass the test without a signal.
DEMO = """
import sys, time
from pathlib import Path
from sco.demo.procs import Procs

procs = Procs(logs=Path(sys.argv[1]))
print(procs.start("sleeper", ["sleep", "600"]).pid, flush=True)
time.sleep(600)
"""
GONE_WITHIN_S = 60.0  # the kernel signals at once; a loaded machine may run the child's exit much later


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_process_the_demo_started_is_terminated_when_the_demo_is_killed(tmp_path: Path) -> None:
    demo = subprocess.Popen([sys.executable, "-c", DEMO, str(tmp_path)], stdout=subprocess.PIPE, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    child = 0
    try:
        assert demo.stdout is not None
        child = int(demo.stdout.readline())
        assert _alive(child)
        demo.kill()  # SIGKILL: no finally, no handler runs in the demo
        demo.wait(10)
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        # once in ~10 loaded runs the child outlived a 10 s wait: its signal state says whether SIGTERM was blocked
        assert not _alive(child), " ".join(line for line in Path(f"/proc/{child}/status").read_text().splitlines()
                                           if line.startswith(("SigBlk", "SigIgn", "SigPnd", "ShdPnd")))
    finally:
        demo.kill()
        demo.wait(10)
        if demo.stdout is not None:
            demo.stdout.close()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
