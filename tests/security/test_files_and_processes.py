"""Files and processes: the credentials are readable only by whoever ran ``sco up`` (and each server's own
file by the service account), the servers run as that account, and nobody can stop or inspect them."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
from pathlib import Path

import pytest

from sco.stack.services import SERVICE_USERS

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


def test_every_server_runs_as_its_own_service_account_and_nobody_can_neither_stop_nor_inspect_it(
        probed: Probed, secured_stack: SecuredStack) -> None:
    if os.geteuid() != 0:
        pytest.skip("the privilege drop happens when sco up runs as root")
    accounts = {store: pwd.getpwnam(user) for store, user in SERVICE_USERS.items()}
    assert len({a.pw_uid for a in accounts.values()}) == 3
    assert not [a for a in accounts.values() if a.pw_uid == 0 or a.pw_name == "nobody"]
    for name, pid in secured_stack.pids().items():
        uids = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:"))
        assert set(uids.split()[1:]) == {str(accounts[name].pw_uid)}, (name, uids)
        probed.refused(f"stop {name}", "Operation not permitted")
        probed.refused(f"environ {name}", "Permission denied")


def test_no_secret_is_on_a_command_line_anyone_can_read(secured_stack: SecuredStack) -> None:
    secrets = json.loads((secured_stack.home / "credentials.json").read_text())
    values = [v for store in ("postgres", "nats", "clickhouse", "agents") for v in secrets[store].values()]
    for name, pid in secured_stack.pids().items():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        assert not [v for v in values if v in cmdline], name


def test_no_server_account_reads_another_servers_secrets(secured_stack: SecuredStack) -> None:
    """Defence in depth: the ClickHouse engine reads files by design, so its account must not be able to read
    nats.conf or pg_hba.conf (nor the NATS account users.json, ...)."""
    if os.geteuid() != 0:
        pytest.skip("the accounts are split when sco up runs as root")
    home = secured_stack.home
    own = {"nats": home / "nats" / "nats.conf", "postgres": home / "postgres" / "pgdata" / "pg_hba.conf",
           "clickhouse": home / "clickhouse" / "users.json"}
    for reader in SERVICE_USERS.values():
        for store, path in own.items():
            done = subprocess.run(["runuser", "-u", reader, "--", "head", "-c", "1", str(path)],
                                  capture_output=True, text=True, timeout=30)
            readable = done.returncode == 0
            assert readable == (reader == SERVICE_USERS[store]), (reader, str(path), done.stderr)
