"""The errors of the ``sco`` top floor (the CLI, its commands and the embedded stack). Standard library only.

    Exception
    ├── CliError             a usage or input error, printed as one line; exit code 2 unless ``code`` says
    └── ClickHouseError      the embedded ClickHouse front end's error, in ClickHouse's own shape
                             (``Code: N. DB::Exception: …``); ``http_status`` maps it to an HTTP status

The commands turn the lower floors' errors (``ContractsError``, ``StoresError``, ``AgentError``, ...) into
``CliError``, chaining the cause where it helps. ``sco.stack.clickhouse_http`` re-exports ``ClickHouseError``.
"""

from __future__ import annotations

import re

__all__ = ["CliError", "ClickHouseError"]

_CLICKHOUSE_ERROR = re.compile(r"Code: (\d+)\. .*?(?:\(([A-Z0-9_]+)\))?(?: \(version [^)]*\))?\s*$", re.S)


class CliError(Exception):
    """Printed as one line on stderr; exit code 2 (usage/input) unless ``code`` says otherwise."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class ClickHouseError(Exception):
    """An error in the shape ClickHouse reports it: ``Code: N. DB::Exception: …``."""

    def __init__(self, code: int, message: str, name: str = "") -> None:
        super().__init__(message)
        self.code, self.name = code, name

    @classmethod
    def from_engine(cls, exc: BaseException) -> ClickHouseError:
        text = str(exc).strip()
        match = _CLICKHOUSE_ERROR.match(text)
        if match:
            return cls(int(match.group(1)), text, match.group(2) or "")
        return cls(1001, f"Code: 1001. DB::Exception: {text}. (STD_EXCEPTION)", "STD_EXCEPTION")

    @classmethod
    def make(cls, code: int, name: str, message: str) -> ClickHouseError:
        return cls(code, f"Code: {code}. DB::Exception: {message}. ({name})", name)
