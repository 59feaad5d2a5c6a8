"""The suite's guard on the ``SCO_*`` environment: what a test leaves behind is named and put back."""

from __future__ import annotations

import os

import pytest

from tests.conftest import put_back_sco_environ


def test_a_variable_added_changed_or_removed_is_named_and_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCO_GUARD_KEPT", "start")
    monkeypatch.setenv("SCO_GUARD_REMOVED", "there")
    monkeypatch.delenv("SCO_GUARD_ADDED", raising=False)
    start = {k: v for k, v in os.environ.items() if k.startswith("SCO_")}
    os.environ["SCO_GUARD_KEPT"] = "changed"
    os.environ["SCO_GUARD_ADDED"] = "leaked"
    del os.environ["SCO_GUARD_REMOVED"]
    assert put_back_sco_environ(start) == ["SCO_GUARD_ADDED", "SCO_GUARD_KEPT", "SCO_GUARD_REMOVED"]
    assert {k: v for k, v in os.environ.items() if k.startswith("SCO_")} == start


def test_an_unchanged_environment_is_left_alone() -> None:
    start = {k: v for k, v in os.environ.items() if k.startswith("SCO_")}
    assert put_back_sco_environ(start) == []
