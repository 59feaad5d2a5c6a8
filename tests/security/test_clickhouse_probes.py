"""ClickHouse front end: what ``sco up`` hands it. The probes against the front end itself (no user, a wrong
password, ``file()``/``url()``/``s3()``/``remote()``/``executable()``, ``INTO OUTFILE``, ``SYSTEM``, ``KILL``,
the read-only profile) belong here too and come with the front end's authentication (the h-chauth branch):
``PROBES_PENDING`` names them."""

from __future__ import annotations

import hashlib
import json
import stat

import pytest

from sco.stack.credentials import CH_USERS

from .conftest import SecuredStack

pytestmark = pytest.mark.services

PROBES_PENDING = ("no user / wrong password refused", "file() and INSERT INTO FUNCTION file() refused",
                  "url(), s3(), hdfs(), remote*(), mysql(), postgresql(), executable() refused",
                  "INTO OUTFILE, SYSTEM, KILL, ATTACH … FROM refused", "reports: read-only profile")


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
