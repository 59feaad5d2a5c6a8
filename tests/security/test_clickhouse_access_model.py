"""The access-model table: for each statement class and each setting, the front end's answer to the writer
(profile ``default``) and the reader (``readonly``) equals what ``deploy/clickhouse/users.xml`` declares.

The expected answer is worked out here from the XML itself (ElementTree, not the front end's policy reader):
the privilege ClickHouse's documentation names for each statement class against the user's ``<grants>``, the
profile's ``readonly``, and each setting against the profile's ``<constraints>`` (``const``, ``min``, ``max``,
``changeable_in_readonly``). What no user holds (source privileges, access management, BACKUP, the other SYSTEM
commands) is refused with 497 before a readonly profile's 164. Every refusal is one log line with its stable
code, the user and the statement class.
"""

from __future__ import annotations

import logging
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from sco.stack.clickhouse_http.policy import POLICY_FILE
from testkit.clickhouse import READER, WRITER
from testkit.paths import REPO
from tests.sco.stack.frontend_helpers import TestFrontend, running_frontend, streamed
from tests.stores.helpers import http

pytestmark = pytest.mark.services
XML = ET.parse(REPO / "deploy" / "clickhouse" / "users.xml").getroot()
XML_USER = {WRITER: "ingest", READER: "reports"}  # the users.xml user whose profile and grants each one has
DB = f"acl_{uuid.uuid4().hex[:8]}"
_UMBRELLAS = {"SHOW": {"SHOW TABLES", "SHOW COLUMNS", "SHOW DATABASES", "SHOW DICTIONARIES"}}
# granted to no user in users.xml: refused (497) before a readonly profile's 164
_EVERYONE = {"FILE", "URL", "S3", "REMOTE", "ACCESS MANAGEMENT", "BACKUP", "SYSTEM SHUTDOWN", "SYSTEM DROP DNS CACHE"}

# (class, statement, the privilege ClickHouse requires, whether it writes)
CLASSES = [
    ("SELECT", "SELECT count() FROM {db}.t", "SELECT", False),
    ("INSERT", "INSERT INTO {db}.t VALUES (1)", "INSERT", True),
    ("ALTER", "ALTER TABLE {db}.t ADD COLUMN IF NOT EXISTS b UInt8", "ALTER", True),
    ("CREATE TABLE", "CREATE TABLE {db}.c_{u} (a UInt8) ENGINE = Memory", "CREATE TABLE", True),
    ("CREATE VIEW", "CREATE VIEW {db}.v_{u} AS SELECT * FROM {db}.t", "CREATE VIEW", True),
    ("CREATE DICTIONARY", "CREATE DICTIONARY {db}.d_{u} (a UInt64, b String) PRIMARY KEY a "
     "SOURCE(CLICKHOUSE(db '{db}' table 'src')) LAYOUT(FLAT()) LIFETIME(0)", "CREATE DICTIONARY", True),
    ("CREATE DATABASE", "CREATE DATABASE db_{u}", "CREATE DATABASE", True),
    ("CREATE TEMPORARY TABLE", "CREATE TEMPORARY TABLE tmp_{u} (a UInt8)", "CREATE TEMPORARY TABLE", True),
    ("DROP TABLE", "DROP TABLE IF EXISTS {db}.gone_{u}", "DROP TABLE", True),
    ("DROP DATABASE", "DROP DATABASE IF EXISTS gone_{u}", "DROP DATABASE", True),
    ("TRUNCATE", "TRUNCATE TABLE {db}.scratch", "TRUNCATE", True),
    ("OPTIMIZE", "OPTIMIZE TABLE {db}.t", "OPTIMIZE", True),
    ("EXCHANGE", "EXCHANGE TABLES {db}.x1 AND {db}.x2", "DROP TABLE", True),
    ("SHOW TABLES", "SHOW TABLES FROM {db}", "SHOW TABLES", False),
    ("DESCRIBE", "DESCRIBE TABLE {db}.t", "SHOW COLUMNS", False),
    ("EXISTS", "EXISTS TABLE {db}.t", "SHOW COLUMNS", False),
    ("dictGet", "SELECT dictGet('{db}.dict', 'b', toUInt64(1))", "DICTGET", False),
    ("SYSTEM FLUSH LOGS", "SYSTEM FLUSH LOGS", "SYSTEM FLUSH LOGS", True),
    ("SYSTEM RELOAD DICTIONARY", "SYSTEM RELOAD DICTIONARY {db}.dict", "SYSTEM RELOAD DICTIONARY", True),
    ("KILL QUERY", "KILL QUERY WHERE query_id = 'none-{u}'", "KILL QUERY", True),
    ("SYSTEM SHUTDOWN", "SYSTEM SHUTDOWN", "SYSTEM SHUTDOWN", True),
    ("SYSTEM DROP DNS CACHE", "SYSTEM DROP DNS CACHE", "SYSTEM DROP DNS CACHE", True),
    ("BACKUP", "BACKUP TABLE {db}.t TO Disk('backups', '{u}.zip')", "BACKUP", True),
    ("GRANT", "GRANT SELECT ON *.* TO default", "ACCESS MANAGEMENT", True),
    ("CREATE USER", "CREATE USER evil_{u} IDENTIFIED BY 'x'", "ACCESS MANAGEMENT", True),
    ("file()", "SELECT * FROM file('/etc/passwd', 'LineAsString')", "FILE", False),
    ("path as a table", "SELECT * FROM '/etc/passwd'", "FILE", False),
    ("url()", "SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')", "URL", False),
    ("s3()", "SELECT * FROM s3('http://127.0.0.1:1/b/k', 'CSV')", "S3", False),
    ("remote()", "SELECT * FROM remote('127.0.0.1:1', system.one)", "REMOTE", False),
]
SETTINGS = [("http_max_field_name_size", "1048576"), ("distributed_ddl_task_timeout", "5"),
            ("distributed_product_mode", "allow"), ("s3_max_connections", "10"), ("max_threads", "4"),
            ("max_threads", "64"), ("max_memory_usage", "1000000000"), ("max_memory_usage", "99000000000"),
            ("max_execution_time", "60"), ("max_execution_time", "5000"), ("readonly", "1"), ("allow_ddl", "0"),
            ("allow_introspection_functions", "1"), ("format_schema", "x.proto:M"),
            ("output_format_schema", "/tmp/x.capnp"), ("max_concurrent_queries_for_user", "1000")]


def _grants(user: str) -> set[str]:
    node = XML.find(f"users/{XML_USER[user]}")
    assert node is not None
    granted: set[str] = set()
    for query in node.findall("grants/query"):
        text = (query.text or "").strip()
        assert text.upper().startswith("GRANT ") and text.endswith(" ON *.*"), text
        for item in text[len("GRANT "):-len(" ON *.*")].split(","):
            name = " ".join(item.upper().split())
            granted |= {name} | _UMBRELLAS.get(name, set())
    return granted


def _profile(user: str) -> ET.Element:
    node = XML.find(f"profiles/{XML.findtext(f'users/{XML_USER[user]}/profile')}")
    assert node is not None
    return node


def expected_statement(user: str, privilege: str, writes: bool) -> int:
    """0 (allowed), 497 or 164: what users.xml declares for ``user`` running a statement of that class."""
    granted = privilege in _grants(user)
    if privilege in _EVERYONE and not granted:
        return 497
    if _profile(user).findtext("readonly") == "1" and writes:
        return 164
    return 0 if granted else 497


def expected_setting(user: str, name: str, value: str) -> int:
    profile = _profile(user)
    constraint = profile.find(f"constraints/{name}")
    if profile.findtext("readonly") == "1" and (constraint is None or constraint.find("changeable_in_readonly")
                                                is None):
        return 164
    if constraint is None:
        return 0
    if constraint.find("const") is not None:
        return 452
    low, high = constraint.findtext("min"), constraint.findtext("max")
    if (low is not None and float(value) < float(low)) or (high is not None and float(value) > float(high)):
        return 452
    return 0


@pytest.fixture(scope="module")
def frontend() -> Iterator[TestFrontend]:
    with running_frontend() as server:
        for sql in (f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (a UInt8) ENGINE = MergeTree ORDER BY a",
                    f"CREATE TABLE {DB}.scratch (a UInt8) ENGINE = Memory",
                    f"CREATE TABLE {DB}.x1 (a UInt8) ENGINE = Memory",
                    f"CREATE TABLE {DB}.x2 (a UInt8) ENGINE = Memory",
                    f"CREATE TABLE {DB}.src (a UInt64, b String) ENGINE = Memory",
                    f"INSERT INTO {DB}.src VALUES (1, 'one')",
                    f"CREATE DICTIONARY {DB}.dict (a UInt64, b String) PRIMARY KEY a SOURCE(CLICKHOUSE(db '{DB}' "
                    "table 'src')) LAYOUT(FLAT()) LIFETIME(0)"):
            reply = http(server.url + "/", sql.encode())
            assert reply.status == 200, (sql, reply.body)
        yield server


def _answer(status: int, headers: dict[str, str]) -> int:
    code = int(headers.get("X-ClickHouse-Exception-Code", "0"))
    return code if code in (497, 164, 452) else 0  # an engine error (no such backup disk …) is no refusal


def test_deploy_users_xml_is_the_policy_the_front_end_reads() -> None:
    assert (REPO / "deploy" / "clickhouse" / "users.xml").read_bytes() == POLICY_FILE.read_bytes()


@pytest.mark.parametrize(("kind", "statement", "privilege", "writes"), CLASSES, ids=[c[0] for c in CLASSES])
@pytest.mark.parametrize("user", [WRITER, READER])
def test_each_statement_class_is_answered_as_users_xml_declares(
        frontend: TestFrontend, caplog: pytest.LogCaptureFixture, user: str, kind: str, statement: str,
        privilege: str, writes: bool) -> None:
    sql = statement.format(db=DB, u=uuid.uuid4().hex[:8])
    with caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        reply = http(frontend.url_for(user) + "/?" + urlencode({"query": sql}))
    want = expected_statement(user, privilege, writes)
    assert _answer(reply.status, reply.headers) == want, (user, kind, reply.status, reply.body[:300])
    lines = [r.getMessage() for r in caplog.records if r.name == "sco.clickhouse.security"]
    if want:
        assert len(lines) == 1 and f" user={user} class=" in lines[0], lines
        assert lines[0].split(" ")[0] in ("CHS002", "CHS003", "CHS006", "CHS007"), lines
    else:
        assert lines == [] and reply.status in (200, 404, 500), (kind, reply.body[:300])


@pytest.mark.parametrize(("name", "value"), SETTINGS, ids=[f"{n}={v}" for n, v in SETTINGS])
@pytest.mark.parametrize("user", [WRITER, READER])
@pytest.mark.parametrize("how", ["url", "SET", "SETTINGS"])
def test_each_setting_is_answered_as_the_profiles_constraints_declare(
        frontend: TestFrontend, caplog: pytest.LogCaptureFixture, user: str, name: str, value: str, how: str,
        ) -> None:
    literal = value if value.isdigit() else f"'{value}'"
    params = {"url": {name: value, "query": "SELECT 1"}, "SET": {"query": f"SET {name} = {literal}"},
              "SETTINGS": {"query": f"SELECT 1 SETTINGS {name} = {literal}"}}[how]
    with caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        reply = http(frontend.url_for(user) + "/?" + urlencode(params))
    want = expected_setting(user, name, value)
    assert _answer(reply.status, reply.headers) == want, (user, name, value, how, reply.body[:300])
    lines = [r.getMessage() for r in caplog.records if r.name == "sco.clickhouse.security"]
    assert (len(lines) == 1 and lines[0].startswith(("CHS003", "CHS004"))) if want else not lines, lines


def test_a_writer_sets_http_and_distributed_settings_flushes_logs_and_kills_a_query(frontend: TestFrontend) -> None:
    url = frontend.url_for(WRITER) + "/?"
    settings = {"http_max_field_name_size": "1048576", "distributed_ddl_task_timeout": "5"}
    assert http(url + urlencode({**settings, "query": "SELECT 1"})).body == b"1\n"
    for sql in ("SET http_max_field_name_size = 1048576, distributed_ddl_task_timeout = 5", "SYSTEM FLUSH LOGS",
                f"SYSTEM RELOAD DICTIONARY {DB}.dict", "KILL QUERY WHERE query_id = 'no-such-query' SYNC"):
        reply = http(url + urlencode({"query": sql}))
        assert reply.status == 200, (sql, reply.body)


def test_a_failure_under_one_mib_is_the_mid_stream_form_once_headers_went_out_else_the_plain_error(
        frontend: TestFrontend) -> None:
    sql = ("SELECT number, throwIf(number = 40000, 'late failure') FROM numbers(100000) "
           "SETTINGS max_block_size = 1000, max_threads = 1")
    sent = streamed(frontend.url + "/?" + urlencode({"query": sql, "send_progress_in_http_headers": "1",
                                                     "http_headers_progress_interval_ms": "0"}))
    tag = sent.headers["X-ClickHouse-Exception-Tag"]
    assert sent.status == 200 and not sent.complete and len(sent.body) < 1 << 20
    assert sent.headers["X-ClickHouse-Exception-Code"] == "395"
    assert sent.body.rstrip().endswith(f"{tag}\r\n__exception__".encode())
    assert f"__exception__\r\n{tag}\r\n".encode() in sent.body and b"late failure" in sent.body
    held = streamed(frontend.url + "/?" + urlencode({"query": sql}))  # nothing went out: the error's own status
    assert (held.status, held.headers["X-ClickHouse-Exception-Code"]) == (500, "395")
    assert held.body.startswith(b"Code: 395. DB::Exception: ") and b"__exception__" not in held.body
