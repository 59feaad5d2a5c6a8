"""Files and processes: the credentials are readable only by whoever ran ``sco up`` (and each server's own
file by the service account), the servers run as that account, and nobody can stop or inspect them."""

from __future__ import annotations

import json
import os
import pwd
import stat
from pathlib import Path

import pytest

from sco.stack.services import SERVICE_USER

from .conftest import Probed, SecuredStack

pytestmark = pytest.mark.services


def test_the_credentials_files_are_mode_0600_and_nobody_can_read_them_or_list_the_data(
        probed: Probed, secured_stack: SecuredStack) -> None:
    for path in secured_stack.secret_files():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        probed.refused(f"read {path}", "Permission denied")
    for path in secured_stack.private_dirs():
        probed.refused(f"list {path}", "Permission denied")
    assert probed.after == probed.before


def test_every_server_runs_as_the_service_account_and_nobody_can_neither_stop_nor_inspect_it(
        probed: Probed, secured_stack: SecuredStack) -> None:
    if os.geteuid() != 0:
        pytest.skip("the privilege drop happens when sco up runs as root")
    service = pwd.getpwnam(SERVICE_USER)
    assert service.pw_uid != 0 and service.pw_name != "nobody"
    for name, pid in secured_stack.pids().items():
        uids = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:"))
        assert set(uids.split()[1:]) == {str(service.pw_uid)}, (name, uids)
        probed.refused(f"stop {name}", "Operation not permitted")
        probed.refused(f"environ {name}", "Permission denied")


def test_no_secret_is_on_a_command_line_anyone_can_read(secured_stack: SecuredStack) -> None:
    secrets = json.loads((secured_stack.home / "credentials.json").read_text())
    values = [v for store in ("postgres", "nats", "clickhouse", "agents") for v in secrets[store].values()]
    for name, pid in secured_stack.pids().items():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert not [v for v in values if v in cmdline], name
