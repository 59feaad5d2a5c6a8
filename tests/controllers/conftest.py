"""Fixtures the controller areas share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest


@pytest.fixture
def conn(pg_migrated_url: str) -> Iterator[Any]:
    """An autocommit connection to a fresh, migrated PostgreSQL database."""
    with psycopg.connect(pg_migrated_url, autocommit=True) as c:
        yield c
