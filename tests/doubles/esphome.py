"""The ``esphome`` fixture: an ESPHome smart-plug double a test (``testkit.esphome``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.esphome import EspHomeDouble

__all__ = ["esphome"]


@pytest.fixture
def esphome() -> Iterator[EspHomeDouble]:
    with EspHomeDouble() as double:
        yield double
