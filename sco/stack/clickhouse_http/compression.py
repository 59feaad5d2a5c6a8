"""Response compression, as a ClickHouse server does it: only with ``enable_http_compression=1`` and an
``Accept-Encoding`` the server knows, picked in ClickHouse's own order of preference (zstd, br, lz4, gzip,
deflate — ``chooseHTTPCompressionMethod``), at ``http_zlib_compression_level`` (default 3).

A :class:`Compressor` turns the response body into one compressed stream piece by piece: ``compress``
may return nothing until enough input arrived, ``flush`` pushes out everything given so far (so a
streamed response and a mid-stream exception reach the client without waiting for more), ``finish``
ends the stream.
"""

from __future__ import annotations

import importlib.util
import zlib
from typing import Any, Protocol

__all__ = ["Compressor", "choose_encoding", "make_compressor"]

# ClickHouse's preference, most preferred first; "br" only when the brotli module is installed.
_PREFERENCE = ("zstd", "br", "lz4", "gzip", "deflate")
DEFAULT_LEVEL = 3


class Compressor(Protocol):
    encoding: str

    def compress(self, data: bytes | memoryview) -> bytes:
        """The compressed bytes ready so far; may be empty until enough input has arrived."""

    def flush(self) -> bytes:
        """Everything given so far, compressed, so the client can read it without waiting for more."""

    def finish(self) -> bytes:
        """The rest of the stream and its end; nothing may be compressed after it."""


def _available(encoding: str) -> bool:
    module = {"zstd": "backports.zstd", "br": "brotli", "lz4": "lz4.frame"}.get(encoding)
    if module is None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (backports, lz4) is missing
        return False


def choose_encoding(accept_encoding: str) -> str | None:
    """The encoding the server uses for an ``Accept-Encoding`` list, or None (send it uncompressed)."""
    offered = set()
    for item in accept_encoding.lower().split(","):
        name, _, params = item.strip().partition(";")
        if params.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000"):
            continue  # explicitly refused by the client
        offered.add("gzip" if name.strip() == "x-gzip" else name.strip())
    for encoding in _PREFERENCE:
        if encoding in offered and _available(encoding):
            return encoding
    return None


class _Zlib:
    def __init__(self, encoding: str, level: int) -> None:
        self.encoding = encoding
        wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS  # gzip, or zlib for "deflate"
        self._z = zlib.compressobj(level, zlib.DEFLATED, wbits)

    def compress(self, data: bytes | memoryview) -> bytes:
        return self._z.compress(data)

    def flush(self) -> bytes:
        return self._z.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._z.flush(zlib.Z_FINISH)


class _Zstd:
    encoding = "zstd"

    def __init__(self, level: int) -> None:
        from backports import zstd

        self._z: Any = zstd.ZstdCompressor(level=level)
        self._block, self._frame = zstd.ZstdCompressor.FLUSH_BLOCK, zstd.ZstdCompressor.FLUSH_FRAME

    def compress(self, data: bytes | memoryview) -> bytes:
        return bytes(self._z.compress(data))

    def flush(self) -> bytes:
        return bytes(self._z.flush(self._block))

    def finish(self) -> bytes:
        return bytes(self._z.flush(self._frame))


class _Lz4:
    encoding = "lz4"

    def __init__(self, level: int) -> None:
        import lz4.frame

        self._z: Any = lz4.frame.LZ4FrameCompressor(compression_level=0, auto_flush=True)  # fast mode
        self._header: bytes = self._z.begin()

    def _with_header(self, data: bytes) -> bytes:
        header, self._header = self._header, b""
        return header + data

    def compress(self, data: bytes | memoryview) -> bytes:
        return self._with_header(bytes(self._z.compress(data)))

    def flush(self) -> bytes:
        return self._with_header(b"")  # auto_flush: every compress() already produced whole blocks

    def finish(self) -> bytes:
        return self._with_header(bytes(self._z.flush()))


class _Brotli:
    encoding = "br"

    def __init__(self, level: int) -> None:
        import brotli

        self._z: Any = brotli.Compressor(quality=level)

    def compress(self, data: bytes | memoryview) -> bytes:
        return bytes(self._z.process(bytes(data)))

    def flush(self) -> bytes:
        return bytes(self._z.flush())

    def finish(self) -> bytes:
        return bytes(self._z.finish())


def make_compressor(encoding: str, level: int = DEFAULT_LEVEL) -> Compressor:
    """A fresh compressor for one response body (``encoding`` from :func:`choose_encoding`)."""
    if encoding in ("gzip", "deflate"):
        return _Zlib(encoding, level)
    if encoding == "zstd":
        return _Zstd(level)
    if encoding == "lz4":
        return _Lz4(level)
    if encoding == "br":
        return _Brotli(level)
    raise ValueError(f"unknown response encoding {encoding!r}")
