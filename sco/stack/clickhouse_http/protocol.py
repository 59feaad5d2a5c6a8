"""The ClickHouse HTTP protocol, the parts that do not touch the engine: reading a request into a
:class:`Request` (URL parameters, headers, chunked and compressed bodies, multipart forms) and turning an
engine error into the status code and headers a ClickHouse server would send.

Reference: https://clickhouse.com/docs/interfaces/http — query in the URL or the body (the two are joined
with a newline), ``param_<name>`` for ``{name:Type}`` placeholders, every other unknown URL parameter is a
setting, data for ``INSERT … FORMAT x`` follows in the body.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import IO, Any

from sco.errors import ClickHouseError

from .bodies import decompress, decompress_stream, large_body, spilled
from .native import split_arguments

__all__ = [
    "DEFAULT_MAX_BODY",
    "MAX_SESSION_TIMEOUT_S",
    "TRANSPORT_PARAMS",
    "ClickHouseError",
    "ExternalTable",
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
                   "AUTHENTICATION_FAILED": 401, "HTTP_LENGTH_REQUIRED": 411,
                   "TOO_MANY_SIMULTANEOUS_QUERIES": 503, "CANNOT_READ_ALL_DATA": 400}
MAX_SESSION_TIMEOUT_S = 3600.0  # ClickHouse's default max_session_timeout
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_A_COLUMN_LIST = re.compile(r";|`|--|/\*|\b(DEFAULT|MATERIALIZED|ALIAS|EPHEMERAL|CODEC|TTL|COMMENT|SETTINGS)\b",
                                re.I)
_INSERT = re.compile(rb"^\s*INSERT\s+INTO\b.*?\bFORMAT\s+([A-Za-z0-9_]+)(?:[ \t]*;)?[ \t]*(\r?\n|[ \t]|$)",
                     re.S | re.I)


def http_status(error: ClickHouseError) -> int:
    """The HTTP status ClickHouse's HTTPHandler gives an exception code (500 unless listed)."""
    return _STATUS_BY_NAME.get(error.name, 500)


@dataclass
class ExternalTable:
    """A file sent with the query (``multipart/form-data``): a temporary table for that query only."""

    name: str
    structure: str  # "a UInt8, b String"
    fmt: str
    data: bytes


@dataclass
class Request:
    query: bytes
    insert: tuple[str, str] | None  # (``INSERT INTO t (cols)``, format) when rows follow in ``data``
    data: bytes | IO[bytes]  # an insert's rows; a large decompressed body stays in a spooled file
    database: str | None
    query_id: str
    session_id: str | None
    default_format: str
    params: dict[str, bytes] = field(default_factory=dict)  # {name: value} for {name:Type}, binary-safe
    settings: dict[str, str] = field(default_factory=dict)
    session_timeout_s: float = 60.0
    session_check: bool = False
    transport: dict[str, str] = field(default_factory=dict)  # the HTTP-layer parameters given (TRANSPORT_PARAMS)
    external: list[ExternalTable] = field(default_factory=list)


DEFAULT_MAX_BODY = 256 << 20  # bytes of request body after decompression (past 8 MiB it goes to a temporary file)


def split_insert(query: bytes) -> tuple[str, str, bytes] | None:
    """``INSERT INTO t (a) FORMAT X<ws>data`` → (``INSERT INTO t (a)``, ``X``, data); else None."""
    match = _INSERT.match(query)
    if match is None or match.group(1).upper() == b"VALUES":
        return None
    head = query[: match.start(1)].rstrip()
    head = re.sub(rb"\bFORMAT\s*$", b"", head, flags=re.I).rstrip()
    return head.decode(), match.group(1).decode(), query[match.end():]


def _multipart(body: bytes, content_type: str) -> tuple[dict[str, str], dict[str, bytes]]:
    """Form fields of a multipart body, and its files (external tables: form name → data)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    fields: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload: Any = part.get_payload(decode=True) or b""
        if not isinstance(name, str):
            continue
        if part.get_filename():
            files[name] = bytes(payload)
        else:
            fields[name] = bytes(payload).decode()
    return fields, files


def _external_tables(files: dict[str, bytes], params: dict[str, str]) -> list[ExternalTable]:
    """The external tables of a request, as a server reads them: ``<name>_structure`` (``a UInt8, b String``)
    or ``<name>_types`` (columns ``_1``, ``_2``…), ``<name>_format`` (default ``TabSeparated``)."""
    tables = []
    for name, data in files.items():
        if not _IDENTIFIER.match(name):
            raise ClickHouseError.make(36, "BAD_ARGUMENTS", f"External table name {name[:60]!r} is not an "
                                       "identifier: name the file part with letters, digits and _")
        structure = params.get(f"{name}_structure", "")
        types = params.get(f"{name}_types", "")
        if not structure and types:
            structure = ", ".join(f"_{i} {t}" for i, t in enumerate(split_arguments(types), 1))
        if not structure:
            raise ClickHouseError.make(36, "BAD_ARGUMENTS", f"Neither structure nor types have not been provided "
                                       f"for external table {name}. Use fields {name}_structure or {name}_types to "
                                       "do so")
        if _NOT_A_COLUMN_LIST.search(structure):
            raise ClickHouseError.make(62, "SYNTAX_ERROR", f"External table structure {structure[:80]!r} must be a "
                                       "list of 'name Type' pairs (no defaults, codecs, comments or statements)")
        tables.append(ExternalTable(name, structure, params.get(f"{name}_format") or "TabSeparated", data))
    return tables


def _session_timeout(value: str) -> float:
    try:
        timeout = float(value)
    except ValueError:
        timeout = -1.0
    if not 0 < timeout <= MAX_SESSION_TIMEOUT_S:
        raise ClickHouseError.make(36, "INVALID_SESSION_TIMEOUT", f"Invalid session timeout: {value!r}; give "
                                   f"seconds between 1 and {MAX_SESSION_TIMEOUT_S:g}")
    return timeout


def parse_request(params: Mapping[str, str | bytes], headers: Mapping[str, str], body: bytes | IO[bytes],
                  max_body: int = DEFAULT_MAX_BODY) -> Request:
    """Build a :class:`Request` from the URL parameters, the headers and the (still encoded) body.

    A parameter value given as bytes is the raw percent-decoded value: the query and ``param_*`` values
    stay bytes (binary-safe), the rest are read as UTF-8.
    """
    raw = {k: v if isinstance(v, bytes) else v.encode() for k, v in params.items()}
    merged = {k: v.decode(errors="replace") for k, v in raw.items()}
    for flag in ("compress", "decompress"):  # ClickHouse's own block compression (not HTTP Content-Encoding)
        if merged.get(flag, "0") not in ("0", ""):
            raise ClickHouseError.make(48, "NOT_IMPLEMENTED", f"{flag}=1 (ClickHouse native block compression) is "
                                       "not supported by the embedded front end; use Content-Encoding instead")
    ctype = headers.get("content-type", "")
    stream = decompress_stream(body, headers.get("content-encoding", ""), max_body)
    if spilled(stream) and not ctype.lower().startswith("multipart/form-data"):
        large = large_body(raw.get("query", b""), stream, _INSERT)
        if large is not None:
            return _request(raw, merged, headers, large[0], large[1], large[2], [])
    with stream:
        body = stream.read()
    files: dict[str, bytes] = {}
    if ctype.lower().startswith("multipart/form-data"):
        fields, files = _multipart(body, ctype)
        merged.update(fields)
        raw.update((k, v.encode()) for k, v in fields.items())
        body = b""
    url_query = raw.get("query", b"")
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
    return _request(raw, merged, headers, query, insert, data, _external_tables(files, merged))


def _request(raw: dict[str, bytes], merged: dict[str, str], headers: Mapping[str, str], query: bytes,
             insert: tuple[str, str] | None, data: bytes | IO[bytes], external: list[ExternalTable]) -> Request:
    table_params = {f"{t.name}_{suffix}" for t in external for suffix in ("structure", "types", "format")}
    settings = {k: v for k, v in merged.items()
                if k not in TRANSPORT_PARAMS and not k.startswith("param_") and k not in table_params}
    return Request(
        query=query, insert=insert, data=data,
        database=merged.get("database") or headers.get("x-clickhouse-database") or None,
        query_id=merged.get("query_id") or str(uuid.uuid4()),
        session_id=merged.get("session_id") or None,
        default_format=merged.get("default_format") or headers.get("x-clickhouse-format") or "TabSeparated",
        params={k[len("param_"):]: v for k, v in raw.items() if k.startswith("param_")},
        settings=settings,
        session_timeout_s=_session_timeout(merged.get("session_timeout") or "60"),
        session_check=merged.get("session_check", "0") not in ("0", ""),
        transport={k: v for k, v in merged.items() if k in TRANSPORT_PARAMS and k not in ("query", "password")},
        external=external,
    )
