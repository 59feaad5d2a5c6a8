"""Canonical JSON: the exact bytes that are signed.

Rules (a subset of RFC 8785 that our payloads need): object keys sorted by code point, no insignificant
whitespace, UTF-8 without escaping non-ASCII, integers as integers, ``Decimal`` as its string (money is
never a float), floats refused (their text is not portable), a single trailing newline is *not* added.
Two documents that differ only in key order or whitespace canonicalise to the same bytes.

Imports only the standard library: the agent verifies bundles with this module.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from .errors import CanonicalError

__all__ = ["CanonicalError", "canonical_bytes", "digest"]


def _normalise(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        raise CanonicalError(
            f"{path or '<root>'} = {value!r} is a float; floats have no canonical text. "
            "Use an integer unit (e.g. seconds, milli-units) or a Decimal string."
        )
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{path or '<root>'} has a non-string key {key!r}; JSON keys are strings.")
            out[key] = _normalise(item, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, list | tuple):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise CanonicalError(f"{path or '<root>'} has type {type(value).__name__}, which JSON cannot carry.")


def canonical_bytes(value: Any) -> bytes:
    """Return the canonical UTF-8 JSON encoding of ``value``."""
    normal = _normalise(value, "")
    return json.dumps(normal, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical encoding."""
    return "sha256:" + hashlib.sha256(canonical_bytes(value)).hexdigest()
