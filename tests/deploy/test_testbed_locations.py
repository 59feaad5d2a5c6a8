"""Per-checkout test beds: where tests look for them (tests/support/testbeds.py) and the free ports their `up`
picks (deploy/testbed/free_ports.py)."""

from __future__ import annotations

import importlib.util
import random
import socket
from pathlib import Path
from types import ModuleType

import pytest

from testkit.paths import REPO
from tests.support.testbeds import bed_dir


def _free_ports() -> ModuleType:
    spec = importlib.util.spec_from_file_location("free_ports", REPO / "deploy" / "testbed" / "free_ports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_test_bed_lives_under_this_checkouts_sco_directory_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCO_SLURM_TESTBED_DIR", raising=False)
    assert bed_dir("slurm", "SCO_SLURM_TESTBED_DIR") == REPO / ".sco" / "testbed" / "slurm"


def test_the_directory_override_still_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCO_CEPH_TESTBED_DIR", str(tmp_path))
    assert bed_dir("ceph", "SCO_CEPH_TESTBED_DIR") == tmp_path


def test_up_picks_distinct_ports_below_the_ephemeral_range() -> None:
    free_ports = _free_ports()
    ports = free_ports.pick(6, random.Random(7))
    assert len(set(ports)) == 6
    assert all(free_ports.LOW <= p <= free_ports.HIGH < 32768 for p in ports)


def test_a_port_something_listens_on_is_never_picked() -> None:
    free_ports = _free_ports()
    port = free_ports.pick(1, random.Random(11))[0]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        assert not free_ports.is_free(port)
        again = free_ports.pick(1, random.Random(11))  # the same draw now has to skip the busy port
    assert port not in again
