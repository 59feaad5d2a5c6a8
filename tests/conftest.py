"""Shared test configuration.

Tests marked ``testbed`` need a system test bed brought up by ``deploy/testbed/<name>/up`` (Slurm,
OpenStack, Ceph RGW). They are skipped when ``SCO_TESTBED`` is unset (a developer's quick run) and
required when it is set: ``.ci/run`` exports ``SCO_TESTBED=required``, so in CI a missing test bed fails
rather than skips.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytest_plugins = ["tests.support.leftovers"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SCO_TESTBED"):
        return
    skip = pytest.mark.skip(reason="system test bed: set SCO_TESTBED=1 after deploy/testbed/<name>/up")
    for item in items:
        if "testbed" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def chdir_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path
