"""Where the repository is, for tests that run its files or commands."""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO"]

REPO = Path(__file__).resolve().parents[1]
