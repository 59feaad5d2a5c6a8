"""Which loopback port an embedded server starts on: the one ``stack.json`` recorded, when free again."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["choose_ports", "port_free"]


def choose_ports(stores: Sequence[str], records: Mapping[str, Any], fresh: list[int],
                 free: Callable[[int], bool]) -> list[int]:
    """The port each store in ``stores`` starts on: the one ``stack.json`` recorded for it when it is free again
    (after a crash: clients, agents' user-data and running processes hold that port), else a ``fresh`` one."""
    out: list[int] = []
    for store, spare in zip(stores, fresh, strict=True):
        record = records.get(store) or {}
        recorded = int(record.get("port") or 0) if record.get("managed") else 0
        out.append(recorded if recorded and recorded not in out and free(recorded) else spare)
    return out


def port_free(port: int, wait_s: float = 10.0) -> bool:
    """Nothing holds 127.0.0.1:``port`` (it can be bound), waiting up to ``wait_s`` for a server killed just
    now to let go of it (a process in uninterruptible sleep keeps its sockets until it is gone)."""
    deadline = time.monotonic() + wait_s
    while True:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return True
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
