"""The CLI's error type: a usage or input error printed as one line."""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """Printed as one line on stderr; exit code 2 (usage/input) unless ``code`` says otherwise."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code
