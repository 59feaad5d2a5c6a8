"""What a stranger on the host tries: run as the unprivileged local user ``nobody`` by the security suite.

``python -m tests.security.nobody_probes '<json>'`` tries every probe against the stack the JSON names and
prints one JSON object: probe name -> ``{"refused": bool, "error": str}`` (``refused`` False: the probe got
through, and ``error`` says what it got). It knows only what any local user can see: the ports (``ss``), the
paths (the README) and the process ids (``ps``) — no credential.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Result = dict[str, Any]


def _try(action: Callable[[], object]) -> Result:
    try:
        got = action()
    except Exception as exc:  # every refusal counts, and its text is what the test checks
        return {"refused": True, "error": f"{type(exc).__name__}: {exc}"}
    return {"refused": False, "error": f"got through: {got!r}"[:300]}


def _pg(url: str, statement: str | None = None) -> object:
    import psycopg

    with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
        return conn.execute(statement).fetchall() if statement else "connected"


def postgres_probes(port: int) -> dict[str, Result]:
    base = f"127.0.0.1:{port}"
    return {
        "pg_superuser_without_password": _try(lambda: _pg(f"postgresql://postgres@{base}/postgres")),
        "pg_superuser_guessed_password": _try(lambda: _pg(f"postgresql://postgres:postgres@{base}/postgres")),
        "pg_copy_from_program": _try(lambda: _pg(f"postgresql://postgres@{base}/sco",
                                                 "COPY (SELECT 1) TO PROGRAM 'touch /tmp/sco-probe-pwned'")),
        "pg_owner_without_password": _try(lambda: _pg(f"postgresql://sco_owner@{base}/sco")),
        "pg_controller_without_password": _try(lambda: _pg(
            f"postgresql://sco_controller@{base}/sco", "UPDATE breakers SET state = 'closed'")),
        "pg_unix_socket": _try(lambda: _pg(f"postgresql://postgres@/postgres?host=/tmp&port={port}")),
    }


async def _nats_publish(port: int, subject: str) -> object:
    import nats

    nc = await nats.connect(f"nats://127.0.0.1:{port}", connect_timeout=3, allow_reconnect=False,
                            max_reconnect_attempts=0)
    try:
        await nc.publish(subject, b'{"spoofed": true}')
        await nc.flush(timeout=3)
    finally:
        await nc.close()
    return "published"


async def _nats_guess(port: int, subject: str) -> object:
    import nats

    nc = await nats.connect(f"nats://region:region@127.0.0.1:{port}", connect_timeout=3, allow_reconnect=False,
                            max_reconnect_attempts=0)
    await nc.close()
    return "connected"


def nats_probes(port: int, subject: str) -> dict[str, Result]:
    return {
        "nats_anonymous_notice": _try(lambda: asyncio.run(_nats_publish(port, subject))),
        "nats_guessed_relay_password": _try(lambda: asyncio.run(_nats_guess(port, subject))),
    }


def file_probes(paths: list[str]) -> dict[str, Result]:
    out: dict[str, Result] = {}
    for path in paths:
        p = Path(path)
        if p.is_dir():
            out[f"list {path}"] = _try(lambda p=p: sorted(os.listdir(p)))  # type: ignore[misc]
        else:
            out[f"read {path}"] = _try(lambda p=p: p.read_bytes()[:40])  # type: ignore[misc]
    return out


def process_probes(pids: dict[str, int]) -> dict[str, Result]:
    out: dict[str, Result] = {}
    for name, pid in pids.items():
        out[f"stop {name}"] = _try(lambda pid=pid: os.kill(pid, signal.SIGTERM))  # type: ignore[misc]
        out[f"environ {name}"] = _try(lambda pid=pid: Path(f"/proc/{pid}/environ").read_bytes()[:40])  # type: ignore[misc]
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    results: dict[str, Result] = {"whoami": {"refused": False, "error": str(os.geteuid())}}
    results.update(postgres_probes(int(spec["pg_port"])))
    results.update(nats_probes(int(spec["nats_port"]), str(spec["notice_subject"])))
    results.update(file_probes(list(spec["files"])))
    results.update(process_probes({k: int(v) for k, v in spec["pids"].items()}))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
