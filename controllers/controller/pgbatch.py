"""A pass's statements sent together (psycopg's pipeline mode), so that a pass waits for PostgreSQL a few times,
not once a statement (the replay through the controller measured ≈ 145 round trips a pass, most of them
``BEGIN``/``COMMIT`` and reads waited for one by one).

``pipelined(conn)`` puts the connection in pipeline mode for a block (or joins the block already open on it):
statements are queued, a read waits once for everything queued before it, and the block's end sends the rest and
waits for it to be committed. ``atomic(conn)`` is the transaction of a group of writes: a transaction block
outside pipeline mode; inside it, the pipeline's own implicit transaction (every statement up to the next sync
commits or none does), which needs no round trip of its own. ``commit(conn)`` sends what is queued and waits for
it to be committed — after a provider action, so that its record and events do not wait for the end of the pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

__all__ = ["atomic", "commit", "in_pipeline", "pipelined"]

_OPEN: dict[int, Any] = {}   # id(connection) -> the Pipeline a ``pipelined`` block opened on it


@contextmanager
def pipelined(conn: Any) -> Iterator[None]:
    """``conn`` in pipeline mode for the block; inside a ``pipelined`` block already, that block's pipeline (its
    end, not this one's, sends and waits). At the end of the outermost block what is queued is committed."""
    if id(conn) in _OPEN or in_pipeline(conn):
        yield
        return
    with conn.pipeline() as p:
        _OPEN[id(conn)] = p
        try:
            yield
        finally:
            del _OPEN[id(conn)]


def in_pipeline(conn: Any) -> bool:
    """Whether ``conn`` is in pipeline mode (statements queued, not waited for)."""
    return bool(getattr(getattr(conn, "pgconn", None), "pipeline_status", 0))


def atomic(conn: Any) -> AbstractContextManager[Any]:
    """One transaction for the writes of the block: in pipeline mode the pipeline's implicit one (up to the next
    sync: no round trip here), else a transaction block."""
    return nullcontext() if in_pipeline(conn) else conn.transaction()


def commit(conn: Any) -> None:
    """Send what is queued on ``conn`` and wait until it is committed (nothing to do outside pipeline mode:
    every ``atomic`` block committed at its end)."""
    p = _OPEN.get(id(conn))
    if p is not None:
        p.sync()
