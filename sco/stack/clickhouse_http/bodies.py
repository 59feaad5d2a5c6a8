"""Compressed request bodies, bounded while they are decompressed and kept out of memory when large.

A body is decompressed 1 MiB at a time into a spooled file: the first ``SPOOL_BYTES`` stay in memory, the rest
goes to a temporary file, and past ``limit`` bytes decompression stops with ``TOO_LARGE_SIZE_COMPRESSED`` — so a
gzip bomb costs at most ``SPOOL_BYTES`` of memory before it is refused. A large body that is an insert's data
(``INSERT … FORMAT x`` in the URL, or at the head of the body) stays in the file and reaches chDB in chunks;
any other large body is a query text, read into memory only up to ``MAX_QUERY_TEXT``.
"""

from __future__ import annotations

import re
import tempfile
import zlib
from collections.abc import Callable
from typing import IO, Any

from sco.errors import ClickHouseError

__all__ = ["MAX_QUERY_TEXT", "SPOOL_BYTES", "decompress", "decompress_stream", "spool", "too_large"]

SPOOL_BYTES = 8 << 20  # decompressed bytes held in memory before the rest goes to a temporary file
MAX_QUERY_TEXT = 64 << 20  # a query text (not an insert's data) is parsed from memory: no larger than this
_PIECE = 1 << 20
_INSERT_HEAD = 1 << 20  # how much of a large body is searched for ``INSERT … FORMAT x``


def too_large(limit: int) -> ClickHouseError:
    """The ClickHouse error for a body over ``limit`` bytes once decompressed, saying how to send it instead."""
    return ClickHouseError.make(
        307, "TOO_LARGE_SIZE_COMPRESSED", f"request body over {limit} bytes after decompression; send it in "
        "smaller inserts or start the front end with a larger max_body_bytes")


def _bounded(factory: Callable[[], Any], body: bytes, limit: int, sink: IO[bytes]) -> None:
    """Decompress ``body`` (one or more frames) into ``sink``, 1 MiB at a time; stop past ``limit`` bytes.

    ``factory`` makes a streaming decompressor with ``decompress(data, max_length)``, ``eof`` and
    ``unused_data`` (zlib, zstd, lz4 frame).
    """
    total = 0
    decompressor, data = factory(), body
    while True:
        want = min(_PIECE, limit + 1 - total)
        piece = decompressor.decompress(data, want)
        total += len(piece)
        if total > limit:
            raise too_large(limit)
        sink.write(piece)
        data = getattr(decompressor, "unconsumed_tail", b"")
        if decompressor.eof:
            if not decompressor.unused_data:
                return
            decompressor, data = factory(), decompressor.unused_data
        elif len(piece) < want and not data and getattr(decompressor, "needs_input", True):
            raise ValueError("the compressed body ended before its end-of-stream marker")


def _factory(enc: str) -> Callable[[], Any] | None:
    if enc in ("gzip", "x-gzip"):
        return lambda: zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj
    if enc == "zstd":
        from backports import zstd  # clickhouse-connect's own dependency on Python < 3.14

        return zstd.ZstdDecompressor
    if enc == "lz4":
        import lz4.frame

        return lz4.frame.LZ4FrameDecompressor  # type: ignore[no-any-return]
    return None


def decompress_stream(body: bytes | IO[bytes], encoding: str, limit: int) -> IO[bytes]:
    """The decompressed body as a spooled file at offset 0 (see the module docstring).

    ``body`` may be a spooled file already (a large body as :func:`spool` read it): without an encoding it is
    returned as it is; a compressed one is read into memory and decompressed as bytes are.
    """
    enc = encoding.strip().lower()
    if not isinstance(body, bytes):
        if enc in ("", "identity"):
            if body.seek(0, 2) > limit:
                body.close()
                raise too_large(limit)
            body.seek(0)
            return body
        with body:
            body.seek(0)
            body = body.read()
    sink: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the caller closes it
    try:
        if enc in ("", "identity"):
            if len(body) > limit:
                raise too_large(limit)
            sink.write(body)
        elif enc in ("br", "brotli"):
            import brotli

            data = bytes(brotli.decompress(body))  # brotli has no bounded API here: checked after
            if len(data) > limit:
                raise too_large(limit)
            sink.write(data)
        else:
            factory = _factory(enc)
            if factory is None:
                raise ClickHouseError.make(1, "UNSUPPORTED_METHOD", f"Unknown Content-Encoding: {enc}")
            _bounded(factory, body, limit, sink)
    except ImportError as exc:
        sink.close()
        raise ClickHouseError.make(
            1, "UNSUPPORTED_METHOD", f"Content-Encoding {enc} needs the Python module {exc.name}") from exc
    except ClickHouseError:
        sink.close()
        raise
    except Exception as exc:
        sink.close()
        raise ClickHouseError.make(271, "CANNOT_DECOMPRESS", f"Cannot decompress {enc} body: {exc}") from exc
    sink.seek(0)
    return sink


def spool(read: Callable[[int], bytes], length: int) -> IO[bytes]:
    """``length`` bytes from ``read`` in a spooled file at offset 0 (``SPOOL_BYTES`` in memory, the rest on disk);
    it holds fewer when ``read`` ran dry first."""
    sink: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the caller closes it
    left = length
    while left > 0 and (piece := read(min(_PIECE, left))):
        sink.write(piece)
        left -= len(piece)
    sink.seek(0)
    return sink


def decompress(body: bytes, encoding: str, limit: int = 256 << 20) -> bytes:
    """Undo a ``Content-Encoding`` (gzip, deflate, zstd, lz4 frame, br) into bytes, bounded by ``limit``."""
    with decompress_stream(body, encoding, limit) as stream:
        return stream.read()


def spilled(stream: IO[bytes]) -> bool:
    """Whether the spooled body went to its temporary file (it is larger than ``SPOOL_BYTES``)."""
    return bool(getattr(stream, "_rolled", False))


def large_body(url_query: bytes, stream: IO[bytes], insert_pattern: re.Pattern[bytes],
               ) -> tuple[bytes, tuple[str, str], IO[bytes]] | None:
    """A body too large for memory that is an insert's data: (query, insert, data left in ``stream``); None
    when it is a query text (``stream`` is then at offset 0 and no larger than ``MAX_QUERY_TEXT``)."""
    if url_query:
        match = insert_pattern.match(url_query.rstrip() + b"\n")
        if match is not None and match.group(1).upper() != b"VALUES" and not url_query[match.end():].strip():
            return url_query, _head(url_query[: match.start(1)], match), stream
    else:
        head = stream.read(_INSERT_HEAD)
        match = insert_pattern.match(head)
        if match is not None and match.group(1).upper() != b"VALUES" and match.end() < len(head):
            stream.seek(match.end())
            return head[: match.end()], _head(head[: match.start(1)], match), stream
        stream.seek(0)
    size = stream.seek(0, 2)
    if size > MAX_QUERY_TEXT:
        stream.close()
        raise ClickHouseError.make(62, "SYNTAX_ERROR", f"Max query size exceeded: a {size}-byte query text is over "
                                   f"{MAX_QUERY_TEXT} bytes; send rows as INSERT … FORMAT data (kept out of memory)")
    stream.seek(0)
    return None


def _head(prefix: bytes, match: re.Match[bytes]) -> tuple[str, str]:
    head = re.sub(rb"\bFORMAT\s*$", b"", prefix.rstrip(), flags=re.I).rstrip()
    return head.decode(), match.group(1).decode()
