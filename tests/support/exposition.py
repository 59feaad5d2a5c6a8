"""A strict reader of the Prometheus text exposition format (0.0.4) for the tests: every sample line parsed into
``(name, labels, value)``, every metric's TYPE and HELP; a malformed line raises ``ValueError`` naming it.
(The project has no Prometheus client library; Debian's Prometheus reads the same text in the end-to-end test.)"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

__all__ = ["Exposition", "parse"]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})(\{{(.*)\}})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')


@dataclass
class Exposition:
    """What one scrape said."""

    types: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def value(self, name: str, **labels: str) -> float:
        """The one sample of ``name`` whose labels include ``labels``; ``KeyError`` when none or several."""
        found = [v for n, ls, v in self.samples if n == name and all(ls.get(k) == x for k, x in labels.items())]
        if len(found) != 1:
            raise KeyError(f"{name}{labels}: {len(found)} samples")
        return found[0]

    def series(self, name: str) -> list[dict[str, str]]:
        """The label sets of every sample of ``name``."""
        return [ls for n, ls, _ in self.samples if n == name]


def _labels(text: str, line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None:
            raise ValueError(f"bad labels in {line!r}")
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def parse(text: str) -> Exposition:
    """Parse a whole exposition; a sample of a histogram must be ``_bucket``/``_count``/``_sum`` of a TYPEd name."""
    doc = Exposition()
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            name, kind = line[7:].split(" ", 1)
            doc.types[name] = kind
        elif line.startswith("# HELP "):
            name, _, text_ = line[7:].partition(" ")
            doc.helps[name] = text_
        elif line.startswith("#"):
            continue
        else:
            m = _SAMPLE.match(line)
            if m is None:
                raise ValueError(f"not a sample line: {line!r}")
            name, labels, raw = m.group(1), _labels(m.group(3) or "", line), m.group(4)
            value = {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}.get(raw)
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            if name not in doc.types and doc.types.get(base) != "histogram":
                raise ValueError(f"sample of {name} without a TYPE line")
            doc.samples.append((name, labels, float(raw) if value is None else value))
    return doc
