"""Drains survive a restart: ``<state>/notice.json`` records the hard notice being drained, and the notice window.

The agent writes the notice when its drain starts (``done: false``) and again when the drain ends
(``done: true``). A restarted agent that finds an unfinished drain whose deadline has not passed resumes it,
with the receipt time carried over so the drain keeps its original deadlines.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from ..model import AgentError, parse_time
from .messages import Notice, parse_notice

__all__ = ["DEFAULT_WINDOW_S", "NOTICE_FILE", "notice_window", "resumable", "save_notice"]

log = logging.getLogger("sco.agent")
NOTICE_FILE = "notice.json"
DEFAULT_WINDOW_S = 120.0  # a resumed notice without a deadline is resumed within this many seconds


def notice_window(notice: Notice, now: datetime, monotonic: float) -> float | None:
    """Seconds from the notice's receipt to deletion.

    ``terminate_at - issued_at`` when both are given
    (both on the provider's clock: no skew with ours); else ``terminate_at`` against our clock, ignored
    when it is already past (a skewed clock must not cancel the drain budget).
    """
    if notice.terminate_at is None:
        return None
    if notice.issued_at is not None:
        window = (notice.terminate_at - notice.issued_at).total_seconds()
        return window if window > 0 else None
    remaining = (notice.terminate_at - now).total_seconds() + (monotonic - notice.received)
    return remaining if remaining > 0 else None


def save_notice(path: Path, notice: Notice, now: datetime, monotonic: float, done: bool) -> None:
    """Write ``notice`` to ``path`` atomically, its receipt as a wall-clock time (``now`` less its age)."""
    age = monotonic - notice.received
    doc = {"notice_id": notice.notice_id, "kind": notice.kind, "instance_id": notice.instance,
           "region": notice.region, "pool_id": notice.pool, "cause": notice.cause, "drill": notice.drill,
           "issued_at": notice.issued_at.isoformat() if notice.issued_at else None,
           "terminate_at": notice.terminate_at.isoformat() if notice.terminate_at else None,
           "received_at": (now - timedelta(seconds=age)).isoformat(), "done": done}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def resumable(path: Path, now: Callable[[], datetime], monotonic: Callable[[], float]) -> Notice | None:
    """The notice recorded in ``path`` when its drain did not finish and its deadline has not passed."""
    try:
        doc = json.loads(path.read_text())
        if doc.get("done"):
            return None
        received_at = parse_time(str(doc["received_at"]))
        age = (now() - received_at).total_seconds()
        notice = parse_notice(doc, "resume", monotonic() - max(age, 0.0))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, AgentError) as exc:
        log.warning("cannot resume the drain recorded in %s: %s", path, exc)
        return None
    window = notice_window(notice, now(), monotonic()) or DEFAULT_WINDOW_S
    if age > window:
        return None  # the deadline has passed: nothing left to drain for (the instance is going)
    log.warning("resuming the drain for notice %s (%.1f s after it arrived)", notice.notice_id, age)
    return notice
