"""The one logging set-up of every SCO process (``sco …``, ``sco-agent``, ``python -m stores.ingest``).

Two formats: ``text`` (one readable line) and ``json`` (one JSON object per line, what a log shipper reads).
A JSON line always has ``time`` (RFC 3339, UTC), ``level``, ``component`` (the program and sub-command, e.g.
``controller-run``), ``logger`` and ``message``; ``partition`` and ``region`` when the process serves one; and
the ids a record carries (``event_id``, ``event_ids``, ``instance``, ``workload``, ``launch_key``, ``code``),
given as ``log.info(…, extra={"event_id": …})``. An exception adds ``error`` (type and message) and
``traceback``.

The format comes from ``--log-format`` or ``SCO_LOG_FORMAT`` (default ``text``), the level from ``--log-level``
or ``SCO_LOG_LEVEL`` (default ``INFO``). Standard library only: the agent uses it (it may not import pydantic).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import IO, Any

__all__ = ["FORMATS", "LEVELS", "JsonFormatter", "configure", "default_format", "default_level"]

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# record attributes (set through ``extra=``) that go into a JSON line as they are
CONTEXT_FIELDS = ("partition", "region", "event_id", "event_ids", "instance", "workload", "launch_key", "code")
_HANDLER_NAME = "sco"


def default_format() -> str:
    """``SCO_LOG_FORMAT`` when it names a format, else ``text``."""
    value = os.environ.get("SCO_LOG_FORMAT", "text").strip().lower()
    return value if value in FORMATS else "text"


def default_level() -> str:
    """``SCO_LOG_LEVEL`` when it names a level, else ``INFO``."""
    value = os.environ.get("SCO_LOG_LEVEL", "INFO").strip().upper()
    return value if value in LEVELS else "INFO"


def _rfc3339(created: float) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
    return f"{whole}.{int(created % 1 * 1000):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record; ``defaults`` (component, partition, region) are in every line."""

    def __init__(self, defaults: dict[str, str]) -> None:
        super().__init__()
        self._defaults = {k: v for k, v in defaults.items() if v}

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON object (no newline inside: a traceback is a string field)."""
        line: dict[str, Any] = {"time": _rfc3339(record.created), "level": record.levelname, **self._defaults,
                                "logger": record.name, "message": record.getMessage()}
        for field in CONTEXT_FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                line[field] = value if isinstance(value, (str, int, float, bool, list)) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line["error"] = f"{type(exc).__name__}: {exc}"
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(component: str, *, fmt: str | None = None, level: str | None = None, partition: str | None = None,
              region: str | None = None, stream: IO[str] | None = None) -> logging.Handler:
    """Install the one handler on the root logger and return it.

    It replaces one installed before (ours or ``basicConfig``'s); a test runner's capturing handlers stay.
    ``fmt`` and ``level`` None: from the environment (``SCO_LOG_FORMAT``, ``SCO_LOG_LEVEL``).
    """
    fmt = fmt or default_format()
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: use one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    if fmt == "json":
        handler.setFormatter(JsonFormatter({"component": component, "partition": partition or "",
                                            "region": region or ""}))
    else:
        where = f" [{partition}]" if partition else ""
        handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {component}{where} %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        if old.get_name() == _HANDLER_NAME or type(old) is logging.StreamHandler:
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level or default_level())
    return handler
