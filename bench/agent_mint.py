"""What ``sco controller run --agent-credentials stack`` costs per launched instance: ``mint_agent`` with the
launch's password on the stack's nats-server (credentials file and server configuration rewritten, SIGHUP, then
wait until the server accepts the new user), as the registry of minted agents grows; and a repeat for an
instance already minted with the same password (what the demo's fleet does after the controller: no reload).

A fresh ``sco up --fast`` home with only NATS, taken down afterwards. Prints the median and the maximum per
window of ``--every`` mints, the total, and the repeat's time.

    .venv/bin/python -m bench.agent_mint [--instances 150] [--every 50]
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench._cli import stop_on_signals
from sco.stack import manager

NATS_ONLY = {"SCO_POSTGRES_URL": "postgresql://external.invalid/unused",
             "SCO_CLICKHOUSE_URL": "http://external.invalid:8123"}


def main() -> None:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=150, help="instances to mint, one after the other")
    parser.add_argument("--every", type=int, default=50, help="report every this many mints")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-agent-mint-")) / ".sco"
    try:
        manager.up(home, env=NATS_ONLY, fast=True)
        times: list[float] = []
        passwords: dict[str, str] = {}
        for i in range(args.instances):
            instance, password = f"i-{i:05d}", secrets.token_urlsafe(24)  # one per launch, as the controller
            started = time.perf_counter()
            manager.mint_agent("r1", instance, home, password=password)
            times.append(time.perf_counter() - started)
            passwords[instance] = password
            if (i + 1) % args.every == 0 or i + 1 == args.instances:
                window = times[-args.every:]
                print(f"agents {i + 1:5d}: mint p50 {statistics.median(window) * 1000:6.1f} ms, "
                      f"max {max(window) * 1000:6.1f} ms")
        started = time.perf_counter()
        manager.mint_agent("r1", "i-00000", home, password=passwords["i-00000"])
        repeat = time.perf_counter() - started
        print(f"total {sum(times):.2f} s for {len(times)} mints; the same instance and password again "
              f"{repeat * 1000:.1f} ms (no reload)")
    finally:
        manager.down(home)
        shutil.rmtree(home.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
