"""One statement running on a chDB connection: its output as a stream of chunks, its progress, its cancel.

A statement with a result set in a row format (:data:`STREAMABLE_FORMATS`) runs as a chDB *streaming*
query (``send_query``): the output arrives one block at a time as the engine produces it, so a result
of any size passes through the front end in bounded memory. chDB's streamed output is the plain
concatenation of the whole output only for those formats — for the others (``Arrow``, ``Parquet``,
``JSON``, ``…WithNames``, ``Pretty``…) it repeats the header or footer in every block — so they, and the
statements chDB cannot stream (``SHOW``, ``DESCRIBE``, DDL, ``SET``, ``INSERT … SELECT``), run to
completion first and are sent whole. ``ArrowStream`` is streamed too, re-framed (:class:`ArrowFrames`):
chDB sends every block as a whole Arrow IPC stream (schema, record batches, end-of-stream marker); the
front end keeps the first block's schema, drops the others' and every block's end marker, and ends the
body with one marker — byte for byte the whole output (checked against chDB 26.9, 200,000 rows in 4
blocks). An empty result streams no block at all, so then the statement is run once more, whole, for
its schema.

A statement with a result set carries a marker comment (``/* sco-qid:<hex> */``) so that another thread
can find it in ``system.processes`` and stop it with ``KILL QUERY`` — chDB's ``streaming_cancel_query``
waits for the block being computed, ``KILL QUERY`` from a second connection interrupts it (measured:
0.1 s into a 35 s count).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from .protocol import ClickHouseError

__all__ = ["ARROW_END", "STREAMABLE_FORMATS", "ArrowFrames", "Execution", "ProgressCallback",
           "kill_statement"]

# Output formats whose streamed blocks concatenate to exactly the whole output (checked against chDB 26.9:
# ``send_query`` chunks joined == ``query`` output, 200,000 rows in 4 blocks).
STREAMABLE_FORMATS = frozenset(name.lower() for name in (
    "TabSeparated", "TSV", "TabSeparatedRaw", "TSVRaw", "Raw", "CSV", "JSONEachRow", "JSONLines", "NDJSON",
    "JSONCompactEachRow", "JSONStringsEachRow", "JSONCompactStringsEachRow", "Native", "RowBinary", "MsgPack",
    "Protobuf", "BSONEachRow", "SQLInsert", "TSKV", "LineAsString", "RawBLOB", "Null", "ArrowStream"))
_CONTINUATION = b"\xff\xff\xff\xff"  # an Arrow IPC message starts with it, then its metadata's length
ARROW_END = _CONTINUATION + b"\x00\x00\x00\x00"  # the end-of-stream marker


class ArrowFrames:
    """Joins chDB's streamed ``ArrowStream`` blocks (each a whole IPC stream) into one IPC stream."""

    def __init__(self) -> None:
        self.blocks = 0

    def block(self, data: bytes | memoryview) -> memoryview:
        """The block without its end marker and, after the first, without its schema message."""
        view = memoryview(data)
        if bytes(view[:4]) != _CONTINUATION or bytes(view[-8:]) != ARROW_END:
            raise ClickHouseError.make(1001, "STD_EXCEPTION", "the engine's ArrowStream block is not a whole IPC "
                                       "stream; ask for the result in another format")
        start = 0 if self.blocks == 0 else 8 + int.from_bytes(view[4:8], "little")  # schema message
        self.blocks += 1
        return view[start:-8]

ProgressCallback = Callable[[dict[str, int]], None]
_NOT_STREAMABLE = "Streaming query is not supported"
_MARKER = "sco-qid"
_PROGRESS_KEYS = ("read_rows", "read_bytes", "written_rows", "written_bytes", "total_rows_to_read")


def kill_statement(killer: Any, tag: str) -> None:
    """``KILL QUERY`` the statement tagged ``tag`` from another connection (``killer``), without waiting.

    The condition is built with ``concat`` so that the KILL statement's own text does not match it.
    """
    killer.query(f"KILL QUERY WHERE query LIKE concat('%', '{_MARKER}', ':{tag}', '%') ASYNC", "TSV")


class Execution:
    """A started statement: ``chunks`` yields its output; ``summary`` what it read, wrote and returned.

    ``cancel`` may be called from any thread (the disconnect watcher); the thread reading ``chunks``
    then gets ``QUERY_WAS_CANCELLED`` from chDB.
    """

    def __init__(self, raw: Any, kill: Callable[[str], None], fmt: str, has_result: bool, read_only: bool,
                 on_progress: ProgressCallback | None = None, streamable: bool = False) -> None:
        self._raw = raw
        self._kill = kill
        self.fmt, self.has_result, self.read_only, self.streamable = fmt, has_result, read_only, streamable
        self.tag = uuid.uuid4().hex
        self.started = time.monotonic()
        self.progress: dict[str, int] = dict.fromkeys(_PROGRESS_KEYS, 0)
        self.result_rows = self.result_bytes = 0
        self.exhausted = False  # every chunk was read (or the statement had no streamed output)
        self.cancelled = False
        self._on_progress = on_progress
        self._stream: Any = None
        self._replay: tuple[str | bytes, str, dict[str, str]] | None = None  # an empty ArrowStream: run it whole
        self.transform: Callable[[bytes | memoryview], bytes | memoryview] | None = None  # applied to each chunk
        self._buffered: list[bytes] = []
        self._lock = threading.Lock()  # cancel vs. the end of the statement

    # -- starting ---------------------------------------------------------------------------------------------
    def _tagged(self, sql: str | bytes) -> str | bytes:
        mark = f"\n/* {_MARKER}:{self.tag} */"
        return sql + mark.encode() if isinstance(sql, bytes) else sql + mark

    def _progress(self, values: dict[str, Any]) -> None:
        for key in _PROGRESS_KEYS:
            self.progress[key] = max(self.progress[key], int(values.get(key) or 0))
        if self._on_progress is not None:
            self._on_progress(self.progress)

    def start(self, sql: str | bytes, default_format: str, params: dict[str, str]) -> None:
        """Run (or, for a result set, begin streaming) ``sql``; errors before any output raise here."""
        self._raw.set_progress_callback(self._progress)
        if not self.read_only:  # no marker: it would be taken for data after INSERT … VALUES
            self._run(sql, default_format, params)
            return
        tagged = self._tagged(sql)
        if self.streamable:
            try:
                self._stream = self._raw.send_query(tagged, default_format, params=params)
                self._replay = (tagged, default_format, params)
                return
            except Exception as exc:
                if _NOT_STREAMABLE not in str(exc):
                    raise
        self._run(tagged, default_format, params)

    def _run(self, sql: str | bytes, default_format: str, params: dict[str, str]) -> None:
        result = self._raw.query(sql, default_format, params=params)
        body = bytes(result.bytes())
        self._buffered = [body] if body else []
        self.progress.update(read_rows=int(result.rows_read()), read_bytes=int(result.bytes_read()),
                             written_rows=int(result.rows_written()), written_bytes=int(result.bytes_written()))
        self.progress["total_rows_to_read"] = max(self.progress["total_rows_to_read"], self.progress["read_rows"])

    # -- output ---------------------------------------------------------------------------------------------
    def chunks(self) -> Iterator[bytes | memoryview]:
        """The output, one engine block at a time; chDB errors become :class:`ClickHouseError`.

        A chunk is only valid until the next one is asked for.
        """
        if self._stream is None:
            for body in self._buffered:
                self.result_bytes += len(body)
                yield self.transform(body) if self.transform is not None else body
            self._buffered = []
            self.exhausted = True
            return
        frames = ArrowFrames() if self.fmt.lower() == "arrowstream" else None
        while True:
            try:
                piece = self._raw.streaming_fetch_result(self._stream)
            except Exception as exc:
                self.exhausted = True  # chDB ended the stream with the error
                raise ClickHouseError.from_engine(exc) from exc
            if piece is None or piece.size() == 0:
                self.exhausted = True  # the stream is over: an end marker (or replay) below needs no cancel
                break
            self.result_rows += int(piece.rows_read())
            # chDB's buffer, not a copy: valid only until the next fetch (the view does not own it), so
            # consumers send or copy each chunk before asking for the next
            data = piece.get_memview().view()
            if frames is not None:
                data = frames.block(data)
            self.result_bytes += data.nbytes
            yield self.transform(data) if self.transform is not None else data
        if frames is not None:
            yield from self._arrow_end(frames)

    def _arrow_end(self, frames: ArrowFrames) -> Iterator[bytes]:
        """The end marker after streamed blocks; with none, the whole (empty) result, for its schema."""
        if frames.blocks:
            self.result_bytes += len(ARROW_END)
            yield ARROW_END
            return
        if self._replay is not None:
            try:
                body = bytes(self._raw.query(*self._replay[:2], params=self._replay[2]).bytes())
            except Exception as exc:
                raise ClickHouseError.from_engine(exc) from exc
            self.result_bytes += len(body)
            yield body

    def summary(self) -> dict[str, str]:
        """``X-ClickHouse-Summary`` as a ClickHouse server writes it (every value a string)."""
        values = {**self.progress, "result_rows": self.result_rows, "result_bytes": self.result_bytes,
                  "elapsed_ns": int((time.monotonic() - self.started) * 1e9)}
        order = ("read_rows", "read_bytes", "written_rows", "written_bytes", "total_rows_to_read",
                 "result_rows", "result_bytes", "elapsed_ns")
        return {key: str(values[key]) for key in order}

    # -- ending ---------------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the statement (any thread); a no-op once it ended."""
        with self._lock:
            if self.exhausted or self.cancelled:
                return
            self.cancelled = True
            self._kill(self.tag)

    def close(self) -> bool:
        """End the statement on its connection; True when the connection holds nothing of it any more.

        An abandoned stream (the client went away, or an error while sending) is killed and read to its
        end, so no block of it is left for the next statement on that connection.
        """
        clean = True
        if self._stream is not None and not self.exhausted:
            clean = False
            self.cancel()
            try:
                for _ in self.chunks():
                    pass
            except ClickHouseError:
                pass  # QUERY_WAS_CANCELLED: the stream is over
        with self._lock:
            self.exhausted = True
        self._raw.set_progress_callback(None)
        return clean and not self.cancelled
