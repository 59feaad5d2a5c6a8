"""External data: files sent with a query (``multipart/form-data``) as temporary tables for that query.

As on a ClickHouse server, the file part's name is the table's name, ``<name>_structure`` (or
``<name>_types``) its columns and ``<name>_format`` the format of the file (default ``TabSeparated``);
see :func:`protocol.parse_request`. The tables are created on the request's own chDB connection before
the statement and dropped after it (a sessionless connection is closed anyway).
"""

from __future__ import annotations

import contextlib
from typing import Any

from .protocol import ExternalTable

__all__ = ["drop_external", "load_external"]

_CHUNK = 4 << 20


def load_external(raw: Any, tables: list[ExternalTable]) -> None:
    """Create and fill a temporary table per external file on the chDB connection ``raw``."""
    for table in tables:
        raw.query(f"CREATE TEMPORARY TABLE `{table.name}` ({table.structure}) ENGINE = Memory", "TSV")
        handle = raw.send_insert(f"INSERT INTO `{table.name}`", table.fmt)
        try:
            view = memoryview(table.data)
            for offset in range(0, len(view), _CHUNK):
                raw.insert_append(handle, bytes(view[offset: offset + _CHUNK]))
            raw.insert_done(handle)
        except BaseException:
            raw.insert_cancel(handle)
            raise


def drop_external(raw: Any, tables: list[ExternalTable]) -> None:
    """Drop the request's external tables from the connection, ignoring those never created."""
    for table in tables:
        with contextlib.suppress(Exception):  # not created (its load failed): nothing to drop
            raw.query(f"DROP TEMPORARY TABLE IF EXISTS `{table.name}`", "TSV")
