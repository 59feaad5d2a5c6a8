"""A ``sco up`` stack that starts only NATS, for tests of what the stack's credentials let each component do.

The other stores are "given by URL" (``NATS_ONLY``) and never started, so the stack is up in about a second.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sco.stack import manager

__all__ = ["NATS_ONLY", "nats_only_stack"]

# only NATS: the other stores are "given by URL" and never started
NATS_ONLY = {"SCO_POSTGRES_URL": "postgresql://unused@127.0.0.1:1/x", "SCO_CLICKHOUSE_URL": "http://127.0.0.1:1"}


@contextlib.contextmanager
def nats_only_stack(prefix: str, nats_cluster: int = 1) -> Iterator[Path]:
    """``sco up --fast`` into a fresh SCO_HOME with only NATS started (``nats_cluster``: 3 for a JetStream cluster
    of three); yields the home, takes it all down after."""
    home = Path(tempfile.mkdtemp(prefix=prefix)) / ".sco"
    try:
        manager.up(home, env=NATS_ONLY, fast=True, nats_cluster=nats_cluster)
        yield home
    finally:
        manager.down(home)
        shutil.rmtree(home.parent, ignore_errors=True)
