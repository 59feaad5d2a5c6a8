"""The security suite's stack: started the README's way (``sco up`` then its migrations, the same code path as
the command) into a temporary ``SCO_HOME``, once for the suite, with one agent credential minted; and the
probes a stranger on the host (``nobody``) runs against it, once, before any test looks at the results.

Every probe test checks two things: the probe was refused with a clear error, and nothing changed (the
fleet tables' rows, the event stream's messages, the files' contents — ``Snapshot``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

NOBODY = "nobody"
REGION, INSTANCE, OTHER = "r1", "i-sec-1", "i-sec-2"
WATCHED = ("breakers", "spend_reservations", "partition_leases", "instances", "exclusions", "rankings_in_force")


@dataclass
class SecuredStack:
    home: Path
    doc: dict[str, Any]            # stack.json
    agent_url: str                 # the NATS credential minted for INSTANCE's agent

    def port(self, store: str) -> int:
        return int(self.doc["services"][store]["port"])

    def url(self, component: str, store: str) -> str:
        return str(self.doc["components"][component][store])

    @property
    def owner_url(self) -> str:
        return str(self.doc["services"]["postgres"]["url"])

    @property
    def admin_nats_url(self) -> str:
        return str(self.doc["services"]["nats"]["url"])

    def pids(self) -> dict[str, int]:
        return {name: int(svc["pid"]) for name, svc in self.doc["services"].items()}

    def secret_files(self) -> list[Path]:
        return [self.home / "stack.json", self.home / "credentials.json", self.home / "nats" / "nats.conf",
                self.home / "clickhouse" / "users.json", self.home / "postgres" / "superuser.secret"]

    def private_dirs(self) -> list[Path]:
        return [self.home, self.home / "postgres" / "pgdata", self.home / "nats" / "jetstream",
                self.home / "clickhouse" / "chdb"]


def _stream_messages(nats_url: str) -> int:
    import nats

    async def count() -> int:
        nc = await nats.connect(nats_url)
        try:
            return int((await nc.jetstream().stream_info("SCO_EVENTS")).state.messages)
        finally:
            await nc.close()

    return asyncio.run(count())


@dataclass(frozen=True)
class Snapshot:
    """What must not change: the rows of the fleet tables, the event stream's size, the secret files."""

    rows: dict[str, int]
    stream: int
    files: dict[str, str]

    @classmethod
    def take(cls, stack: SecuredStack) -> Snapshot:
        import psycopg

        with psycopg.connect(stack.owner_url) as conn:
            rows = {t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in WATCHED}  # type: ignore[index]
        files = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in stack.secret_files()}
        return cls(rows, _stream_messages(stack.admin_nats_url), files)


def _seed(stack: SecuredStack) -> None:
    """A tripped breaker and a held spend reservation: the rows a probe would most like to change."""
    import psycopg

    with psycopg.connect(stack.url("controller", "postgres")) as conn:
        conn.execute("INSERT INTO breakers (region, partition, name, state, reason) "
                     "VALUES ('r1', 'r1/hpc', 'termination', 'open', 'seeded by the security suite')")
        conn.execute("INSERT INTO spend_reservations (reservation_id, workload, region, amount_eur, window_start, "
                     "window_end) VALUES (gen_random_uuid(), 'ci', 'r1', 10, now(), now() + interval '1 hour')")


@pytest.fixture(scope="session")
def secured_stack() -> Iterator[SecuredStack]:
    from sco.stack import bootstrap, manager
    from stores.config import ENV_VARS, load_urls

    home = Path(tempfile.mkdtemp(prefix="sco-security-")) / ".sco"
    try:
        manager.up(home, env={}, fast=True)
        # this stack's own URLs: another fixture of the session (tests/orchestration's stack) may have set
        # SCO_*_URL in this process's environment, which load_urls would prefer
        with mock.patch.dict(os.environ):  # restored as it was on leaving
            for var in ENV_VARS.values():
                os.environ.pop(var, None)
            bootstrap.prepare(load_urls(home))
        agent_url = manager.mint_agent(REGION, INSTANCE, home)
        stack = SecuredStack(home, json.loads((home / "stack.json").read_text()), agent_url)
        _seed(stack)
        yield stack
    finally:
        manager.down(home)
        subprocess.run(["rm", "-rf", str(home.parent)], check=False)


def run_as_nobody(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Run ``tests/security/nobody_probes.py`` as ``nobody`` with ``spec``; its results by probe name.

    The script runs from a copy in a fresh world-readable directory: the checkout may be a mode-700
    ``mktemp -d`` (CI's clean clone) that ``nobody`` can cross (``sco up`` adds the search bit) but not list, so
    it could not import ``tests`` from there. The probes need only the venv's site-packages.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
    python = str(Path(sys.prefix) / "bin" / "python")  # the venv running the suite (a worktree has none)
    with tempfile.TemporaryDirectory(prefix="sco-probes-") as tmp:
        os.chmod(tmp, 0o755)
        script = Path(tmp) / "nobody_probes.py"
        shutil.copyfile(Path(__file__).with_name("nobody_probes.py"), script)
        script.chmod(0o644)
        done = subprocess.run(["runuser", "-u", NOBODY, "--", python, str(script), json.dumps(spec)], cwd=tmp,
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the probes did not run as {NOBODY}: {done.stderr[-2000:]}"
    results: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return results


@dataclass(frozen=True)
class Probed:
    before: Snapshot
    after: Snapshot
    results: dict[str, dict[str, Any]]

    def refused(self, name: str, *fragments: str) -> str:
        """The probe's error, after checking it was refused with an error naming each of ``fragments``."""
        got = self.results[name]
        assert got["refused"], f"{name}: {got['error']}"
        for fragment in fragments:
            assert fragment.lower() in got["error"].lower(), f"{name}: {got['error']!r} lacks {fragment!r}"
        return str(got["error"])


@pytest.fixture(scope="session")
def probed(secured_stack: SecuredStack) -> Probed:
    from contracts.subjects import notice_subject

    if os.geteuid() != 0:
        pytest.skip("the probes run as the local user nobody: the suite must run as root (as `make test` does here)")
    stack = secured_stack
    spec = {"pg_port": stack.port("postgres"), "nats_port": stack.port("nats"),
            "notice_subject": notice_subject(REGION, INSTANCE), "pids": stack.pids(),
            "files": [str(p) for p in (*stack.secret_files(), *stack.private_dirs())]}
    before = Snapshot.take(stack)
    results = run_as_nobody(spec)
    return Probed(before, Snapshot.take(stack), results)
