"""``Native`` output for a client's ``client_protocol_version``, as a ClickHouse server writes it.

chDB's Native writer always runs at client revision 0. A server given ``client_protocol_version=N``
(clickhouse-connect probes for it and then sends 54405 with every query) writes for revision N:

- N > 0: a ``BlockInfo`` before every block (clickhouse-connect's probe checks for it, and without it
  falls back to revision 0);
- N ≥ 54337: top-level ``DateTime('Europe/Berlin')`` keeps its zone — at revision 0 it is written as
  plain ``DateTime`` and the client loses the zone (``DateTime64`` and nested types keep it anyway);
- N ≥ 54454: a "custom serialization" byte (0) after each column's type.

:func:`for_revision` rewrites chDB's blocks accordingly. The column data are unchanged; to reach each
column's header it walks the data of the columns before it. The true types for the zones come from a
``DESCRIBE`` of the query. A type it cannot walk (``Dynamic``, ``JSON``, ``Variant``,
``AggregateFunction``…) leaves a single block with its ``BlockInfo`` but without zones.
"""

from __future__ import annotations

import re

__all__ = ["BLOCK_INFO", "MIN_REVISION_WITH_TIME_ZONE", "for_revision", "split_arguments", "zoned_columns"]

MIN_REVISION_WITH_TIME_ZONE = 54337  # DBMS_MIN_REVISION_WITH_TIME_ZONE_PARAMETER_IN_DATETIME_DATA_TYPE
MIN_REVISION_WITH_CUSTOM_SERIALIZATION = 54454  # a "has custom serialization" byte after each type
# BlockInfo, written before every block for a client revision > 0: field 1 is_overflows = false, field 2
# bucket_num = -1, field 0 = end.
BLOCK_INFO = b"\x01\x00\x02\xff\xff\xff\xff\x00"
_FIXED = {"UInt8": 1, "Int8": 1, "Bool": 1, "Enum8": 1, "Nothing": 1, "UInt16": 2, "Int16": 2, "Date": 2,
          "Enum16": 2, "BFloat16": 2, "UInt32": 4, "Int32": 4, "Float32": 4, "Date32": 4, "DateTime": 4,
          "IPv4": 4, "Decimal32": 4, "Time": 4, "UInt64": 8, "Int64": 8, "Float64": 8, "DateTime64": 8,
          "Decimal64": 8, "Time64": 8, "UInt128": 16, "Int128": 16, "UUID": 16, "IPv6": 16, "Decimal128": 16,
          "UInt256": 32, "Int256": 32, "Decimal256": 32}
_NAMED_ELEMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\s+(?=[A-Z])")


def zoned_columns(types: list[str]) -> bool:
    """Whether any top-level column is a ``DateTime`` with a time zone (the ones chDB strips)."""
    return any(t.startswith("DateTime(") for t in types)


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def split_arguments(args: str) -> list[str]:
    """Top-level comma-separated parts of a type's arguments."""
    parts, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(args):
        if ch == "'" and (i == 0 or args[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return parts


def _u64(buf: memoryview, pos: int) -> int:
    return int.from_bytes(buf[pos: pos + 8], "little")


def _skip(buf: memoryview, pos: int, type_name: str, rows: int) -> int:
    """The position after ``rows`` values of ``type_name`` starting at ``pos``."""
    base, _, rest = type_name.partition("(")
    args = rest[:-1] if rest else ""
    if base in _FIXED:
        return pos + rows * _FIXED[base]
    if base == "Decimal":
        precision = int(split_arguments(args)[0])
        return pos + rows * (4 if precision <= 9 else 8 if precision <= 18 else 16 if precision <= 38 else 32)
    if base == "FixedString":
        return pos + rows * int(args)
    if base == "String":
        for _ in range(rows):
            length, pos = _varint(buf, pos)
            pos += length
        return pos
    if base == "Nullable":
        return _skip(buf, pos + rows, args, rows)
    if base in ("Array", "Map"):
        inner = _u64(buf, pos + (rows - 1) * 8) if rows else 0
        element = args if base == "Array" else f"Tuple({args})"
        return _skip(buf, pos + rows * 8, element, inner)
    if base == "Tuple":
        for element in split_arguments(args):
            pos = _skip(buf, pos, _NAMED_ELEMENT.sub("", element), rows)
        return pos
    if base == "LowCardinality":
        return _skip_low_cardinality(buf, pos, args, rows)
    raise ValueError(f"no Native layout known for {type_name}")


def _skip_low_cardinality(buf: memoryview, pos: int, inner: str, rows: int) -> int:
    pos += 8  # the state prefix: the key serialization version
    if rows == 0:
        return pos
    flags = _u64(buf, pos)
    pos += 8
    if flags & (1 << 9):  # HasAdditionalKeysBit: the dictionary follows
        keys = _u64(buf, pos)
        dictionary = inner.removeprefix("Nullable(").removesuffix(")") if inner.startswith("Nullable(") else inner
        pos = _skip(buf, pos + 8, dictionary, keys)
    count = _u64(buf, pos)
    return pos + 8 + count * (1 << (flags & 0xFF))


def _block(buf: memoryview, pos: int, revision: int, zones: list[str] | None, out: list[bytes | memoryview]) -> int:
    """Copy one block from ``pos`` to ``out`` as a server writes it for ``revision``; returns the next block."""
    if revision > 0:
        out.append(BLOCK_INFO)
    start = pos
    columns, pos = _varint(buf, pos)
    rows, pos = _varint(buf, pos)
    if zones is not None and columns != len(zones):
        raise ValueError(f"{columns} columns, {len(zones)} types")
    for column in range(columns):
        length, pos = _varint(buf, pos)
        pos += length  # the name
        length, type_at = _varint(buf, pos)
        written = bytes(buf[type_at: type_at + length]).decode()
        pos = type_at + length
        true_type = zones[column] if zones is not None else written
        if revision >= MIN_REVISION_WITH_TIME_ZONE and written == "DateTime" and true_type.startswith("DateTime("):
            out.append(buf[start:type_at - 1])  # up to the type's length byte ("DateTime" is 8: one byte)
            out.append(_varint_bytes(len(true_type.encode())) + true_type.encode())
            start = pos
        if revision >= MIN_REVISION_WITH_CUSTOM_SERIALIZATION:
            out.append(buf[start:pos])
            out.append(b"\x00")  # no custom serialization
            start = pos
        pos = _skip(buf, pos, true_type, rows)
    out.append(buf[start:pos])
    return pos


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def for_revision(data: bytes | memoryview, revision: int, zones: list[str] | None = None,
                 one_block: bool = False) -> bytes | memoryview:
    """``data`` (whole Native blocks, as chDB writes them at revision 0) as a server writes it for ``revision``.

    ``zones`` are the true column types (from a ``DESCRIBE``), needed to restore time zones. When the
    blocks cannot be walked, a single block (``one_block``) still gets its ``BlockInfo`` (the zones stay
    stripped); several are returned unchanged.
    """
    if revision <= 0:
        return data
    buf = memoryview(data)
    out: list[bytes | memoryview] = []
    pos = 0
    try:
        while pos < len(buf):
            pos = _block(buf, pos, revision, zones, out)
    except (IndexError, ValueError):  # a type it cannot walk, or not the expected blocks
        pos = -1
    if pos == len(buf):
        return b"".join(out)
    return BLOCK_INFO + bytes(buf) if one_block else data
