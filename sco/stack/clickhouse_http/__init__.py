"""The embedded ClickHouse: a ClickHouse HTTP-protocol front end over chDB (``sco clickhouse serve``)."""

from .engine import ChdbEngine, Result
from .protocol import ClickHouseError, Request, parse_request
from .server import ClickHouseHTTPServer, serve

__all__ = ["ChdbEngine", "ClickHouseError", "ClickHouseHTTPServer", "Request", "Result", "parse_request", "serve"]
