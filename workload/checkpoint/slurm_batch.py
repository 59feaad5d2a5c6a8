"""Slurm requeue with the contract's signal: the batch-script helper (ADR-18, notes/slurm-on-one-host.md).

    #SBATCH --requeue --open-mode=append --signal=B:USR1@110
    #SBATCH --comment=contract=genomics-align@5
    export SCO_DRAIN_SIGNAL=SIGUSR1 SCO_DRAIN_BUDGET_S=110
    exec python -m workload.checkpoint.slurm_batch -- python train.py

The node agent (or Slurm's own ``--signal``) sends the drain signal to the batch shell only
(``scancel --signal=USR1 --batch``). This helper, running as the batch shell, forwards it to the work — which
writes its final checkpoint through the client — waits for the work to finish within the drain budget, then
asks Slurm to requeue the job (``scontrol requeue $SLURM_JOB_ID``) so it restarts from that checkpoint on
another node. If the work overruns the budget it is killed and still requeued (it restarts from the last
periodic generation). Without a notice the helper simply returns the work's exit code.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from types import FrameType

__all__ = ["main"]


def _signum(name: str) -> int:
    name = name.upper()
    return int(getattr(signal, name if name.startswith("SIG") else f"SIG{name}"))


def main(argv: list[str] | None = None) -> int:
    """Run the command under a Slurm batch step, forwarding the drain signal as the notice; its exit status."""
    parser = argparse.ArgumentParser(prog="python -m workload.checkpoint.slurm_batch")
    parser.add_argument("--signal", default=os.environ.get("SCO_DRAIN_SIGNAL", "SIGUSR1"),
                        help="the contract's drain signal (default $SCO_DRAIN_SIGNAL or SIGUSR1)")
    parser.add_argument("--budget-s", type=float, default=float(os.environ.get("SCO_DRAIN_BUDGET_S", "110")))
    parser.add_argument("--scontrol", default="scontrol")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the work to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the work to run after --")
    signum = _signum(args.signal)
    noticed: list[float] = []
    child = subprocess.Popen(command)

    def forward(_s: int, _f: FrameType | None) -> None:
        if not noticed:
            noticed.append(time.monotonic())
            print(f"sco-slurm: drain signal {signal.Signals(signum).name}: forwarding to the work, "
                  f"{args.budget_s:.0f} s budget", file=sys.stderr, flush=True)
        child.send_signal(signum)

    signal.signal(signum, forward)
    signal.signal(signal.SIGTERM, forward if signum == signal.SIGTERM else signal.SIG_DFL)
    while True:
        try:
            code = child.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            if noticed and time.monotonic() - noticed[0] > args.budget_s:
                print("sco-slurm: the work overran the drain budget; killing it", file=sys.stderr, flush=True)
                child.kill()
    if not noticed:
        return code
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        print("sco-slurm: no SLURM_JOB_ID; not requeued", file=sys.stderr)
        return code
    took = time.monotonic() - noticed[0]
    result = subprocess.run([args.scontrol, "requeue", job], capture_output=True, text=True, check=False)
    state = "requeued" if result.returncode == 0 else f"requeue failed: {result.stderr.strip()}"
    print(f"sco-slurm: work exited {code} {took:.2f} s after the notice; job {job} {state}", file=sys.stderr,
          flush=True)
    return code if result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
