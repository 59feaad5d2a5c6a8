"""The errors the ``reports`` package defines. Standard library only.

    Exception
    └── ReportsError     base of every error ``reports`` raises on purpose (none yet)

Building a page raises nothing of its own today: the stores' errors (no ClickHouse URL, the marts not
built yet) reach the caller unwrapped, where the report commands (``sco.commands.report_pages``) turn them
into a one-line ``CliError``. A new error type of this package derives from ``ReportsError``.
"""

from __future__ import annotations

__all__ = ["ReportsError"]


class ReportsError(Exception):
    """Base of every error the ``reports`` package raises on purpose."""
