"""The embedded ClickHouse: a ClickHouse HTTP-protocol front end over chDB (``sco clickhouse serve``).

:func:`serve` runs it as two processes: the guard (:mod:`.frontdoor`, the TCP port and every untrusted byte) and
the engine (:class:`ClickHouseHTTPServer` over :class:`ChdbEngine`, on a private Unix socket).
"""

from .engine import ChdbEngine, Result
from .frontdoor import serve
from .protocol import ClickHouseError, Request, parse_request
from .server import ClickHouseHTTPServer

__all__ = ["ChdbEngine", "ClickHouseError", "ClickHouseHTTPServer", "Request", "Result", "parse_request", "serve"]
