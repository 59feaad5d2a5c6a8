"""Kubernetes quantities ("24", "64Gi", "500m") and durations ("5m", "2m", "30s", "1.5s", "500ms")."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["parse_duration", "parse_quantity"]

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity, or ValueError naming the accepted forms."""
    m = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError(f'{text!r} is not a Kubernetes quantity; write e.g. "24", "500m", "64Gi" or "1e3"')
    try:
        number = Decimal(m.group(1))
    except InvalidOperation:  # pragma: no cover - the regex already guards this
        raise ValueError(f"{text!r} is not a number") from None
    if m.group(2):
        return number * Decimal(10) ** int(m.group(2)[1:])
    return number * _SUFFIX[m.group(3) or ""]


def parse_duration(text: str | int | float) -> float:
    """Seconds in a Go-style duration ("5m", "1m30s", "500ms"); a bare number is seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"duration {text!r} is negative")
        return float(text)
    if not isinstance(text, str):
        raise ValueError(f'{text!r} is not a duration; write e.g. "5m", "90s" or "500ms"')
    s = text.strip()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNIT[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f'{text!r} is not a duration; write e.g. "5m", "90s", "1m30s" or "500ms"')
    return total
