"""The front end authenticates as a ClickHouse server does and refuses, over real HTTP, what reaches outside:
raw requests and clickhouse-connect against ``sco clickhouse serve`` started with a users file."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from sco.stack.clickhouse_http import ChdbEngine, ClickHouseHTTPServer
from sco.stack.clickhouse_http.auth import hash_password, load_users_file, write_users_file
from sco.stack.clickhouse_http.errors import AuthConfigError, UsersFileError
from stores import clickhouse
from testkit.clickhouse import READER, WRITER, ClickHouseProcess
from testkit.paths import REPO
from tests.stores.helpers import Reply, http

from .frontend_helpers import PASSWORDS, running_frontend


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _refused(reply: Reply, code: int, status: int) -> None:
    assert (reply.status, reply.headers["X-ClickHouse-Exception-Code"]) == (status, str(code)), reply
    assert reply.body.startswith(f"Code: {code}. DB::Exception: ".encode()), reply.body


def test_every_way_a_clickhouse_server_takes_credentials_is_accepted(clickhouse_server: ClickHouseProcess) -> None:
    base, password = clickhouse_server.base_url, clickhouse_server.passwords[WRITER]
    assert http(base + "/", b"SELECT 1", _basic(WRITER, password)).body == b"1\n"
    assert http(base + "/", b"SELECT 2", {"X-ClickHouse-User": WRITER, "X-ClickHouse-Key": password}).body == b"2\n"
    assert http(base + "/?" + urlencode({"user": WRITER, "password": password}), b"SELECT 3").body == b"3\n"
    assert http(base + "/ping").body == b"Ok.\n"  # health checks need no credentials, as on a real server


def test_a_wrong_or_missing_password_gets_401_with_code_516(clickhouse_server: ClickHouseProcess) -> None:
    base = clickhouse_server.base_url
    for headers in ({}, _basic(WRITER, "wrong"), _basic("nobody-here", "x"), _basic(WRITER, ""),
                    {"X-ClickHouse-User": WRITER, "X-ClickHouse-Key": "wrong"}, {"Authorization": "Bearer x"}):
        reply = http(base + "/", b"SELECT 1", headers)
        _refused(reply, 516, 401)
        assert b"AUTHENTICATION_FAILED" in reply.body
    _refused(http(base + "/?" + urlencode({"user": WRITER, "password": "wrong"}), b"SELECT 1"), 516, 401)
    both = {**_basic(WRITER, clickhouse_server.passwords[WRITER]), "X-ClickHouse-User": READER}
    _refused(http(base + "/", b"SELECT 1", both), 516, 401)  # one way per request, as ClickHouse says


def test_clickhouse_connect_with_a_wrong_password_raises_516_and_with_the_right_one_works(
        clickhouse_server: ClickHouseProcess) -> None:
    wrong = clickhouse_server.base_url.replace("http://", f"http://{WRITER}:wrong@")
    with pytest.raises(DatabaseError, match="516"):
        clickhouse.client(wrong)
    client = clickhouse.client(clickhouse_server.url)
    try:
        assert client.query("SELECT currentDatabase()").result_rows == [("default",)]
    finally:
        client.close()


def test_a_readonly_user_reads_but_cannot_insert_create_or_set(clickhouse_server: ClickHouseProcess) -> None:
    db = f"t_{uuid.uuid4().hex[:12]}"
    writer = clickhouse.client(clickhouse_server.url)
    writer.command(f"CREATE DATABASE {db}")
    writer.command(f"CREATE TABLE {db}.r (a UInt8) ENGINE = MergeTree ORDER BY a")
    writer.insert(f"{db}.r", [[1], [2]], column_names=["a"])
    reader = clickhouse.client(clickhouse_server.reader_url + f"/{db}")
    try:
        assert reader.query("SELECT sum(a) FROM r").result_rows == [(3,)]
        for statement in ("INSERT INTO r VALUES (3)", "CREATE TABLE r2 (a UInt8) ENGINE = Memory",
                          "SET readonly = 0", "SET max_threads = 1", "DROP TABLE r"):
            with pytest.raises(DatabaseError, match="164"):
                reader.command(statement)
        with pytest.raises(DatabaseError, match="164"):
            reader.insert("r", [[9]], column_names=["a"])
        lifted = http(clickhouse_server.reader_url + f"/?database={db}&readonly=0", b"SELECT 1")
        _refused(lifted, 164, 500)
        assert reader.query("SELECT count() FROM r").result_rows == [(2,)]
    finally:
        reader.close()
        writer.close()


def test_no_user_changes_its_own_profile_or_grants(clickhouse_server: ClickHouseProcess) -> None:
    for statement in (b"GRANT ALL ON *.* TO sco", b"CREATE USER evil IDENTIFIED BY 'x'",
                      b"ALTER USER reader SETTINGS PROFILE 'default'"):
        _refused(http(clickhouse_server.url + "/", statement), 497, 403)
        _refused(http(clickhouse_server.reader_url + "/", statement), 497, 403)


def test_a_session_belongs_to_the_user_who_opened_it(clickhouse_server: ClickHouseProcess) -> None:
    session = f"mine-{uuid.uuid4().hex[:8]}"
    query = "SELECT value FROM system.settings WHERE name = 'max_block_size'"
    opened = http(clickhouse_server.url + "/?" + urlencode({"session_id": session,
                                                           "query": "SET max_block_size = 4242"}))
    assert opened.status == 200
    assert http(clickhouse_server.url + "/?" + urlencode({"session_id": session, "query": query})).body == b"4242\n"
    taken = http(clickhouse_server.reader_url + "/?" + urlencode({"session_id": session, "query": query}))
    _refused(taken, 497, 403)
    assert b"belongs to another user" in taken.body


def test_file_reads_and_writes_are_refused_with_nothing_read_or_written(
        clickhouse_server: ClickHouseProcess, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$the-hash:19000::::::\n")
    target = tmp_path / "written.txt"
    for url in (clickhouse_server.url, clickhouse_server.reader_url):
        read = http(url + "/", f"SELECT * FROM file('{secret}', 'LineAsString')".encode())
        _refused(read, 497, 403)
        assert b"the-hash" not in read.body
        _refused(http(url + "/", b"SELECT * FROM file('/etc/shadow', 'LineAsString')"), 497, 403)
        _refused(http(url + "/", f"INSERT INTO FUNCTION file('{target}', 'LineAsString') SELECT 'x'".encode()),
                 497, 403)
        _refused(http(url + "/?query=" + quote(f"SELECT 'x' INTO OUTFILE '{target}'")), 497, 403)
        _refused(http(url + "/", b"SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')"), 497, 403)
    assert not target.exists()


def test_system_shutdown_and_kill_are_refused_and_the_server_still_answers(
        clickhouse_server: ClickHouseProcess) -> None:
    for statement in (b"SYSTEM SHUTDOWN", b"SYSTEM RELOAD CONFIG", b"SYSTEM DROP DNS CACHE"):
        _refused(http(clickhouse_server.url + "/", statement), 497, 403)
    _refused(http(clickhouse_server.reader_url + "/", b"KILL QUERY WHERE 1"), 164, 500)  # no reader kills
    assert http(clickhouse_server.url + "/", b"SELECT 1").body == b"1\n"


@pytest.mark.services
def test_refusals_are_logged_with_a_stable_code_and_the_user(caplog: pytest.LogCaptureFixture) -> None:
    with running_frontend() as server, caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        http(server.url_for(READER) + "/", b"CREATE TABLE t (a Int32) ENGINE = Memory")
        http(server.url + "/", b"SELECT * FROM file('/etc/shadow', 'LineAsString')")
        http(server.plain_url + "/", b"SELECT 1", _basic(WRITER, "wrong"))
        assert http(server.url_for(READER) + "/", b"SELECT 1").body == b"1\n"
    lines = [r.getMessage() for r in caplog.records if r.name == "sco.clickhouse.security"]
    assert [line.split(" ")[:2] for line in lines] == [
        ["CHS003", f"user={READER}"], ["CHS002", f"user={WRITER}"], ["CHS001", f"user={WRITER}"]]
    assert PASSWORDS[WRITER] not in " ".join(lines)


def test_the_users_file_is_refused_when_others_can_read_it_or_its_shape_is_wrong(tmp_path: Path) -> None:
    good = write_users_file(tmp_path / "users.json", {"a": ("pw", "default"), "b": ("pw2", "readonly")})
    assert os.stat(good).st_mode & 0o777 == 0o600
    users = load_users_file(good)
    reader = users.get("b")
    assert reader is not None and reader.profile == "readonly"
    os.chmod(good, 0o640)
    with pytest.raises(UsersFileError, match=r"CHA002.*mode.*chmod 600"):
        load_users_file(good)
    cases = {"users[0].profile": {"users": [{"name": "a", "password_sha256_hex": hash_password("x"),
                                             "profile": "admin"}]},
             "users[0].password_sha256_hex": {"users": [{"name": "a", "password_sha256_hex": "plain"}]},
             "users[0].name": {"users": [{"name": "a b", "password_sha256_hex": hash_password("x")}]},
             "users[0].extra": {"users": [{"name": "a", "password_sha256_hex": hash_password("x"), "extra": 1}]},
             "users[1].name": {"users": [{"name": "a", "password_sha256_hex": hash_password("x")}] * 2},
             "users": {"users": []}, "(top level)": ["a"]}
    for field, data in cases.items():
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data))
        os.chmod(bad, 0o600)
        with pytest.raises(UsersFileError) as caught:
            load_users_file(bad)
        assert caught.value.field == field, (field, str(caught.value))
    with pytest.raises(UsersFileError, match="CHA001"):
        load_users_file(tmp_path / "missing.json")


def test_the_server_refuses_to_start_without_a_users_file_unless_told_no_auth(tmp_path: Path) -> None:
    engine = ChdbEngine(None)
    try:
        with pytest.raises(AuthConfigError, match="--users-file"):
            ClickHouseHTTPServer("127.0.0.1", 0, engine)
        loose = write_users_file(tmp_path / "users.json", {"a": ("pw", "default")})
        os.chmod(loose, 0o644)
        with pytest.raises(UsersFileError, match="CHA002"):
            ClickHouseHTTPServer("127.0.0.1", 0, engine, users_file=loose)
        server = ClickHouseHTTPServer("127.0.0.1", 0, engine, no_auth=True)  # the one test of --no-auth
        assert server.gate.users is None
        server.server_close()
    finally:
        engine.close()
    refused = subprocess.run([sys.executable, "-m", "sco.stack.clickhouse_http", "-", "0"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "CHA005" in refused.stderr and "--no-auth" in refused.stderr


def test_the_real_server_users_xml_grants_no_source_system_or_access_management() -> None:
    import xml.etree.ElementTree as ET

    root = ET.parse(REPO / "deploy" / "clickhouse" / "users.xml").getroot()
    profiles = {p.tag: p for p in root.findall("profiles/*")}
    assert profiles["sco_readonly"].findtext("readonly") == "1"
    users = root.findall("users/*")
    assert {u.tag: u.findtext("profile") for u in users} == {
        "ingest": "sco_default", "analytics": "sco_default", "reports": "sco_readonly"}
    for user in users:
        assert user.findtext("access_management") == "0"
        grants = " ".join(q.text or "" for q in user.iter("query")).upper()
        for forbidden in ("FILE", "URL", "S3", "REMOTE", "SOURCES", "SYSTEM SHUTDOWN", "ALL", "ACCESS", "BACKUP"):
            assert f" {forbidden}" not in grants.replace(",", " "), (user.tag, forbidden)
