"""Prints N distinct TCP ports that nothing on this machine listens on, one a line (used by the test beds' `up`).

Usage: free_ports.py N. The ports are drawn at random from 20000-32767, below Linux's ephemeral range
(32768-60999), so an outgoing connection cannot take one between this pick and the daemon's bind. A port
counts as free when it can be bound on every address (Slurm's daemons bind 0.0.0.0).
"""

from __future__ import annotations

import random
import socket
import sys

LOW, HIGH = 20000, 32767


def is_free(port: int) -> bool:
    """True when a TCP socket can bind ``port`` on all addresses right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def pick(count: int, rng: random.Random) -> list[int]:
    """``count`` distinct free ports."""
    chosen: list[int] = []
    for _ in range(10_000):
        port = rng.randint(LOW, HIGH)
        if port not in chosen and is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise SystemExit(f"free_ports: found only {len(chosen)} of {count} free ports in {LOW}-{HIGH}")


if __name__ == "__main__":
    print("\n".join(str(p) for p in pick(int(sys.argv[1]), random.SystemRandom())))
