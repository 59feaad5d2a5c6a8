"""Findings: what the compiler says about a contract.

Every finding carries a stable code, where it is
(file and line), the field and value it is about, the rule, and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

__all__ = ["SHOWN_CHARS", "Finding", "Severity", "clip"]

SHOWN_CHARS = 40


class Severity(StrEnum):
    """How much a finding weighs: an error refuses the contract, a warning flags it, info only informs."""

    ERROR = "error"      # the contract is refused
    WARNING = "warning"  # flagged for the owner; compiles (fails only with --strict)
    INFO = "info"        # e.g. a bespoke contract marked for review


def clip(value: Any, limit: int = SHOWN_CHARS) -> Any:
    """``value`` as a finding may show it: numbers and short strings as they are, anything else cut short.

    A file's values reach logs and pull-request comments; an unknown or mistyped field must not echo a
    large (or secret) value in full.
    """
    if value is None or isinstance(value, bool | int):
        return value
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit and isinstance(value, str):
        return value
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


@dataclass(frozen=True)
class Finding:
    """One thing the compiler says about a contract, with where it is and how to fix it."""

    code: str
    severity: Severity
    field: str
    value: Any
    rule: str
    fix: str
    file: str = "<input>"
    line: int = 0
    workload: str | None = None

    def at(self, file: str, line: int) -> Finding:
        """The same finding placed at ``file:line``."""
        return replace(self, file=file, line=line)

    def render(self) -> str:
        """One line for a terminal: ``file:line: CODE severity: field=value: rule Fix: fix``."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        value = "(absent)" if self.value is None else repr(self.value) if isinstance(self.value, str) else self.value
        return f"{where}: {self.code} {self.severity}: {self.field}={value}: {self.rule} Fix: {self.fix}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready dict (the value as a string)."""
        return {
            "code": self.code,
            "severity": str(self.severity),
            "file": self.file,
            "line": self.line,
            "workload": self.workload,
            "field": self.field,
            "value": None if self.value is None else str(self.value),
            "rule": self.rule,
            "fix": self.fix,
        }
