"""ClickHouse probes of issue 14, run as the unprivileged local user ``nobody`` against a front end started as
root the way ``sco up`` starts it (``services.start_clickhouse`` with a users file): without credentials
nothing is answered but 401/516; the users file cannot be read; and even with a report reader's password,
``file('/etc/shadow')``, ``INSERT INTO FUNCTION file(…)``, ``url()`` and ``SYSTEM SHUTDOWN`` are refused with
ClickHouse's codes — nothing read, no file written, the server still serving."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sco.stack.credentials import CH_USERS
from testkit.clickhouse import READER, ClickHouseProcess
from tests.stores.helpers import http

from .conftest import SecuredStack

# Runs as nobody: standard library only; the reader's password comes on stdin (not argv: ps shows argv).
PROBE = r'''
import base64, json, sys, urllib.error, urllib.request
base, users_file, target = sys.argv[1:4]
password = sys.stdin.read().strip()

def ask(sql, headers=None, params=""):
    request = urllib.request.Request(base + "/" + params, data=sql.encode(), headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return [response.status, "", response.read().decode(errors="replace")[:200]]
    except urllib.error.HTTPError as error:
        return [error.code, error.headers.get("X-ClickHouse-Exception-Code", ""),
                error.read().decode(errors="replace")[:200]]

reader = {"Authorization": "Basic " + base64.b64encode(("reader:" + password).encode()).decode()}
results = {
    "shadow_anonymous": ask("SELECT * FROM file('/etc/shadow', 'LineAsString')"),
    "write_anonymous": ask("INSERT INTO FUNCTION file('" + target + "', 'LineAsString') SELECT 'x'"),
    "shutdown_anonymous": ask("SYSTEM SHUTDOWN"),
    "default_empty_password": ask("SELECT 1", params="?user=default&password="),
    "shadow_reader": ask("SELECT * FROM file('/etc/shadow', 'LineAsString')", reader),
    "write_reader": ask("INSERT INTO FUNCTION file('" + target + "', 'LineAsString') SELECT 'x'", reader),
    "url_reader": ask("SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')", reader),
    "shutdown_reader": ask("SYSTEM SHUTDOWN", reader),
    "drop_reader": ask("DROP DATABASE IF EXISTS default", reader),
    "select_reader": ask("SELECT 1", reader),
}
try:
    open(users_file).read()
    results["users_file"] = "read"
except OSError as exc:
    results["users_file"] = type(exc).__name__
print(json.dumps(results))
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start the front end as root and probe as nobody")
def test_nobody_gets_nothing_from_the_clickhouse_front_end(clickhouse_server: ClickHouseProcess,
                                                           tmp_path: Path) -> None:
    target = tmp_path / "written-by-nobody"
    assert clickhouse_server.running is not None
    probe = subprocess.run([sys.executable, "-c", PROBE, clickhouse_server.base_url,
                            str(clickhouse_server.users_file), str(target)],
                           input=clickhouse_server.passwords[READER], user="nobody", group="nogroup",
                           extra_groups=[], cwd="/", capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin"})  # nobody's groups too: root's group may read more
    assert probe.returncode == 0, probe.stderr
    results = json.loads(probe.stdout)
    for name in ("shadow_anonymous", "write_anonymous", "shutdown_anonymous", "default_empty_password"):
        assert results[name][:2] == [401, "516"], (name, results[name])
    for name in ("shadow_reader", "write_reader", "url_reader", "shutdown_reader"):
        assert results[name][:2] == [403, "497"], (name, results[name])
    assert results["drop_reader"][:2] == [500, "164"]
    assert "root:" not in json.dumps(results)  # nothing of /etc/shadow came back
    assert results["select_reader"][0] == 200  # the probe's credentials were good: the refusals are the guard's
    assert results["users_file"] == "PermissionError"
    assert not target.exists()
    assert http(clickhouse_server.url + "/", b"SELECT count() FROM system.databases WHERE name = 'default'"
                ).body == b"1\n"  # still serving, nothing dropped


def test_sco_up_gives_the_front_end_one_user_per_component_with_a_hash_never_the_password(
        secured_stack: SecuredStack) -> None:
    users_file = secured_stack.home / "clickhouse" / "users.json"
    assert stat.S_IMODE(users_file.stat().st_mode) == 0o600
    doc = json.loads(users_file.read_text())
    secrets = json.loads((secured_stack.home / "credentials.json").read_text())["clickhouse"]
    assert {u["name"]: u["profile"] for u in doc["users"]} == CH_USERS
    for user in doc["users"]:
        assert user["password_sha256_hex"] == hashlib.sha256(secrets[user["name"]].encode()).hexdigest()
        assert secrets[user["name"]] not in users_file.read_text()
    assert secured_stack.url("reports", "clickhouse").startswith("http://reports:")
