"""The ClickHouse HTTP protocol, the parts that do not touch the engine: reading a request into a
:class:`Request` (URL parameters, headers, chunked and compressed bodies, multipart forms) and turning an
engine error into the status code and headers a ClickHouse server would send.

Reference: https://clickhouse.com/docs/interfaces/http — query in the URL or the body (the two are joined
with a newline), ``param_<name>`` for ``{name:Type}`` placeholders, every other unknown URL parameter is a
setting, data for ``INSERT … FORMAT x`` follows in the body.
"""

from __future__ import annotations

import gzip
import re
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from sco.errors import ClickHouseError

__all__ = [
    "TRANSPORT_PARAMS",
    "ClickHouseError",
    "Request",
    "decompress",
    "http_status",
    "parse_request",
    "split_insert",
]

# URL parameters that steer the HTTP layer rather than the query; never applied as settings.
TRANSPORT_PARAMS = frozenset({
    "query", "database", "query_id", "session_id", "session_timeout", "session_check", "default_format",
    "compress", "decompress", "user", "password", "quota_key", "buffer_size", "wait_end_of_query",
    "client_protocol_version", "role", "enable_http_compression", "send_progress_in_http_headers",
    "http_headers_progress_interval_ms", "http_wait_end_of_query", "http_response_buffer_size",
    "cancel_http_readonly_queries_on_client_close", "max_execution_time_leeway", "add_http_cors_header",
})

_BAD_REQUEST = {"CANNOT_PARSE_TEXT", "CANNOT_PARSE_ESCAPE_SEQUENCE", "CANNOT_PARSE_QUOTED_STRING",
                "CANNOT_PARSE_DATE", "CANNOT_PARSE_DATETIME", "CANNOT_PARSE_NUMBER", "CANNOT_PARSE_UUID",
                "CANNOT_PARSE_INPUT_ASSERTION_FAILED", "CANNOT_PARSE_IPV4", "CANNOT_PARSE_IPV6",
                "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING", "DUPLICATE_COLUMN", "ILLEGAL_COLUMN",
                "UNKNOWN_ELEMENT_IN_AST", "UNKNOWN_TYPE_OF_AST_NODE", "TOO_DEEP_AST", "TOO_BIG_AST",
                "UNEXPECTED_AST_STRUCTURE", "SYNTAX_ERROR", "INCORRECT_DATA", "TYPE_MISMATCH",
                "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE", "BAD_ARGUMENTS", "CANNOT_DECOMPRESS",
                "UNKNOWN_QUERY_PARAMETER", "BAD_QUERY_PARAMETER", "NUMBER_OF_ARGUMENTS_DOESNT_MATCH",
                "ILLEGAL_TYPE_OF_ARGUMENT", "EMPTY_QUERY", "NO_ELEMENTS_IN_CONFIG"}
_NOT_FOUND = {"UNKNOWN_TABLE", "UNKNOWN_FUNCTION", "UNKNOWN_IDENTIFIER", "UNKNOWN_TYPE", "UNKNOWN_STORAGE",
              "UNKNOWN_DATABASE", "UNKNOWN_SETTING", "UNKNOWN_DIRECTION_OF_SORTING",
              "UNKNOWN_AGGREGATE_FUNCTION", "UNKNOWN_FORMAT", "UNKNOWN_DATABASE_ENGINE",
              "UNKNOWN_TYPE_OF_QUERY", "UNKNOWN_ROLE"}
_STATUS_BY_NAME = {**dict.fromkeys(_BAD_REQUEST, 400), **dict.fromkeys(_NOT_FOUND, 404),
                   "QUERY_IS_TOO_LARGE": 413, "NOT_IMPLEMENTED": 501, "SOCKET_TIMEOUT": 503,
                   "CANNOT_OPEN_FILE": 503, "TIMEOUT_EXCEEDED": 500, "ACCESS_DENIED": 403,
                   "AUTHENTICATION_FAILED": 401, "HTTP_LENGTH_REQUIRED": 411}
_INSERT = re.compile(rb"^\s*INSERT\s+INTO\b.*?\bFORMAT\s+([A-Za-z0-9_]+)(?:[ \t]*;)?[ \t]*(\r?\n|[ \t]|$)",
                     re.S | re.I)


def http_status(error: ClickHouseError) -> int:
    """The HTTP status ClickHouse's HTTPHandler gives an exception code (500 unless listed)."""
    return _STATUS_BY_NAME.get(error.name, 500)


@dataclass
class Request:
    query: bytes
    insert: tuple[str, str] | None  # (``INSERT INTO t (cols)``, format) when rows follow in ``data``
    data: bytes
    database: str | None
    query_id: str
    session_id: str | None
    default_format: str
    params: dict[str, str] = field(default_factory=dict)  # {name: value} for {name:Type}
    settings: dict[str, str] = field(default_factory=dict)


def decompress(body: bytes, encoding: str) -> bytes:
    """Undo a ``Content-Encoding`` the ClickHouse clients use (gzip, deflate, zstd, lz4 frame, br)."""
    enc = encoding.strip().lower()
    try:
        if enc in ("", "identity"):
            return body
        if enc in ("gzip", "x-gzip"):
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
        if enc == "zstd":
            from backports import zstd  # clickhouse-connect's own dependency on Python < 3.14

            return bytes(zstd.decompress(body))
        if enc == "lz4":
            import lz4.frame

            return bytes(lz4.frame.decompress(body))
        if enc in ("br", "brotli"):
            import brotli

            return bytes(brotli.decompress(body))
    except ImportError as exc:
        raise ClickHouseError.make(
            1, "UNSUPPORTED_METHOD", f"Content-Encoding {enc} needs the Python module {exc.name}") from exc
    except Exception as exc:
        raise ClickHouseError.make(271, "CANNOT_DECOMPRESS", f"Cannot decompress {enc} body: {exc}") from exc
    raise ClickHouseError.make(1, "UNSUPPORTED_METHOD", f"Unknown Content-Encoding: {enc}")


def split_insert(query: bytes) -> tuple[str, str, bytes] | None:
    """``INSERT INTO t (a) FORMAT X<ws>data`` → (``INSERT INTO t (a)``, ``X``, data); else None."""
    match = _INSERT.match(query)
    if match is None or match.group(1).upper() == b"VALUES":
        return None
    head = query[: match.start(1)].rstrip()
    head = re.sub(rb"\bFORMAT\s*$", b"", head, flags=re.I).rstrip()
    return head.decode(), match.group(1).decode(), query[match.end():]


def _multipart(body: bytes, content_type: str) -> tuple[dict[str, str], bool]:
    """Form fields of a multipart body, and whether it carried files (external tables)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    fields: dict[str, str] = {}
    has_files = False
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload: Any = part.get_payload(decode=True) or b""
        if part.get_filename():
            has_files = True
        elif isinstance(name, str):
            fields[name] = bytes(payload).decode()
    return fields, has_files


def parse_request(params: Mapping[str, str], headers: Mapping[str, str], body: bytes) -> Request:
    """Build a :class:`Request` from the URL parameters, the headers and the (still encoded) body."""
    merged = dict(params)
    for flag in ("compress", "decompress"):  # ClickHouse's own block compression (not HTTP Content-Encoding)
        if merged.get(flag, "0") not in ("0", ""):
            raise ClickHouseError.make(48, "NOT_IMPLEMENTED", f"{flag}=1 (ClickHouse native block compression) is "
                                       "not supported by the embedded front end; use Content-Encoding instead")
    body = decompress(body, headers.get("content-encoding", ""))
    ctype = headers.get("content-type", "")
    if ctype.lower().startswith("multipart/form-data"):
        fields, has_files = _multipart(body, ctype)
        if has_files:
            raise ClickHouseError.make(48, "NOT_IMPLEMENTED", "external data tables are not supported by the "
                                       "embedded front end; insert them into a table first")
        merged.update(fields)
        body = b""
    url_query = merged.get("query", "").encode()
    insert: tuple[str, str] | None = None
    data = b""
    if url_query and body:
        split = split_insert(url_query.rstrip() + b"\n")
        if split is not None and not split[2].strip():
            query, insert, data = url_query, (split[0], split[1]), body
        else:
            query = url_query + b"\n" + body
    else:
        query = url_query or body
    if insert is None:
        split = split_insert(query)
        if split is not None:
            insert, data = (split[0], split[1]), split[2]
    if not query.strip():
        raise ClickHouseError.make(62, "SYNTAX_ERROR", "Empty query")
    settings = {k: v for k, v in merged.items() if k not in TRANSPORT_PARAMS and not k.startswith("param_")}
    return Request(
        query=query, insert=insert, data=data,
        database=merged.get("database") or headers.get("x-clickhouse-database") or None,
        query_id=merged.get("query_id") or str(uuid.uuid4()),
        session_id=merged.get("session_id") or None,
        default_format=merged.get("default_format") or headers.get("x-clickhouse-format") or "TabSeparated",
        params={k[len("param_"):]: v for k, v in merged.items() if k.startswith("param_")},
        settings=settings,
    )
