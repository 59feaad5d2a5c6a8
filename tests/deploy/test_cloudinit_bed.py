"""deploy/testbed/cloudinit/up: Debian's cloud-init for the user-data tests; idempotent, and where the tests look
for it (tests/support/testbeds.py)."""

from __future__ import annotations

import subprocess

import pytest

from testkit.paths import REPO
from tests.support.testbeds import CLOUD_INIT


@pytest.mark.testbed
def test_a_second_up_finds_cloud_init_installed_and_changes_nothing() -> None:
    done = subprocess.run([str(REPO / "deploy" / "testbed" / "cloudinit" / "up")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already installed" in done.stdout and "installing" not in done.stdout
    assert CLOUD_INIT is not None
    version = subprocess.run([CLOUD_INIT, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and "cloud-init" in version.stdout + version.stderr
