"""Finding: any front-end user read any file the service account could read by naming it as a table.

Every way ClickHouse (and chDB, which runs as ``clickhouse-local``) names a file or a URL is tried by the writer
(``default`` profile) and the reader (``readonly``) against a secret in a private directory: each answer is 497
``ACCESS_DENIED`` (164 ``READONLY`` for a reader's write), one ``CHS002`` log line names the user, the statement
class and the object, the secret is in no answer, and nothing is written.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from testkit.clickhouse import READER, WRITER
from tests.sco.stack.frontend_helpers import TestFrontend, running_frontend
from tests.stores.helpers import http

pytestmark = pytest.mark.services
SECRET = "nats-admin-password-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def secret_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("sco-home")
    (home / "nats.conf").write_text(f'authorization {{ user: admin, password: "{SECRET}" }}\n')
    (home / "users.csv").write_text(f"1,{SECRET}\n")
    return home


@pytest.fixture(scope="module")
def frontend() -> Iterator[TestFrontend]:
    with running_frontend() as server:
        yield server


def _forms(home: Path) -> list[tuple[str, str, bytes | None, dict[str, str]]]:
    """(name, statement, request body after the statement, extra URL parameters) for each way to name a file."""
    conf, csv, out = home / "nats.conf", home / "users.csv", home / "written.txt"
    return [
        ("file()", f"SELECT * FROM file('{conf}', 'LineAsString')", None, {}),
        ("file() glob", f"SELECT * FROM file('{home}/*', 'LineAsString')", None, {}),
        ("scalar file()", f"SELECT file('{conf}')", None, {}),
        ("path literal", f"SELECT * FROM '{conf}'", None, {}),
        ("backquoted path", f"SELECT * FROM `{conf}`", None, {}),
        ("default.`path`", f"SELECT * FROM default.`{conf}`", None, {}),
        ("path glob", f"SELECT * FROM '{home}/*.conf'", None, {}),
        ("path in a subquery", f"SELECT * FROM (SELECT * FROM '{csv}')", None, {}),
        ("path in a CTE", f"WITH x AS (SELECT * FROM '{csv}') SELECT * FROM x", None, {}),
        ("path in IN", f"SELECT 1 WHERE '{SECRET}' IN (SELECT c2 FROM '{csv}')", None, {}),
        ("IN a path", f"SELECT 1 WHERE 'x' IN `{conf}`", None, {}),
        ("NOT IN default.path", f"SELECT 1 WHERE 'x' NOT IN default.`{conf}`", None, {}),
        ("loop() over a path", f"SELECT * FROM loop('default', '{conf}') LIMIT 1", None, {}),
        ("hasColumnInTable on a path", f"SELECT hasColumnInTable('default', '{conf}', 'c1')", None, {}),
        ("INSERT INTO a path", f"INSERT INTO default.`{out}` SELECT 'x'", None, {}),
        ("TRUNCATE a path", f"TRUNCATE TABLE `{conf}`", None, {}),
        ("VALUES evaluating file()", f"INSERT INTO t_files VALUES (file('{conf}'))", None, {}),
        ("FORMAT Values rows in the body", "INSERT INTO t_files FORMAT Values", f"(file('{conf}'))".encode(), {}),
        ("VALUES rows in the body", "INSERT INTO t_files VALUES", f"('a'), (file('{conf}'))".encode(), {}),
        ("VALUES with IN a path", "INSERT INTO t_files VALUES", f"(toString('x' IN `{conf}`))".encode(), {}),
        ("path in a JOIN", f"SELECT * FROM numbers(1) AS n JOIN '{csv}' AS f ON 1", None, {}),
        ("DESCRIBE path", f"DESCRIBE TABLE '{conf}'", None, {}),
        ("SHOW CREATE path", f"SHOW CREATE TABLE `{conf}`", None, {}),
        ("SHOW COLUMNS FROM path", f"SHOW COLUMNS FROM `{conf}`", None, {}),
        ("EXISTS path", f"EXISTS TABLE `{conf}`", None, {}),
        ("EXPLAIN path", f"EXPLAIN PIPELINE SELECT * FROM '{conf}'", None, {}),
        ("path with database=default", f"SELECT * FROM `{conf}`", None, {"database": "default"}),
        ("url()", "SELECT * FROM url('http://127.0.0.1:1/x', 'LineAsString')", None, {}),
        ("url literal", "SELECT * FROM 'http://127.0.0.1:1/x.csv'", None, {}),
        ("s3()", "SELECT * FROM s3('http://127.0.0.1:1/b/k.csv', 'CSV')", None, {}),
        ("remote()", "SELECT * FROM remote('127.0.0.1:1', system.one)", None, {}),
        ("input() with a format", "INSERT INTO t_files SELECT * FROM input('a String') FORMAT LineAsString", b"x\n",
         {}),
        ("INTO OUTFILE", f"SELECT 'x' INTO OUTFILE '{out}'", None, {}),
        ("FROM INFILE", f"INSERT INTO t_files FROM INFILE '{conf}' FORMAT LineAsString", None, {}),
        ("INSERT INTO FUNCTION file()", f"INSERT INTO FUNCTION file('{out}', 'LineAsString') SELECT 'x'", None, {}),
        ("dictionary FILE source", f"CREATE DICTIONARY d_files (a UInt64, b String) PRIMARY KEY a "
         f"SOURCE(FILE(path '{csv}' format 'CSV')) LAYOUT(FLAT()) LIFETIME(0)", None, {}),
        ("dictionary HTTP source", "CREATE DICTIONARY d_http (a UInt64) PRIMARY KEY a "
         "SOURCE(HTTP(url 'http://127.0.0.1:1/' format 'CSV')) LAYOUT(FLAT()) LIFETIME(0)", None, {}),
        ("ENGINE = File", f"CREATE TABLE f_engine (a String) ENGINE = File(LineAsString, '{conf}')", None, {}),
        ("ENGINE = URL", "CREATE TABLE u_engine (a String) ENGINE = URL('http://127.0.0.1:1/', CSV)", None, {}),
        ("CREATE TABLE AS file()", f"CREATE TABLE f_as AS file('{conf}', 'LineAsString')", None, {}),
        ("DATABASE ENGINE = Filesystem", f"CREATE DATABASE fs_db ENGINE = Filesystem('{home}')", None, {}),
        ("ATTACH … FROM a path", f"ATTACH TABLE a_from FROM '{home}' (a String) ENGINE = MergeTree ORDER BY a",
         None, {}),
        ("a disk of its own", "CREATE TABLE t_disk (a Int32) ENGINE = MergeTree ORDER BY a "
         f"SETTINGS disk = disk(type = local, path = '{home}/')", None, {}),
    ]


@pytest.mark.parametrize("index", range(43))
@pytest.mark.parametrize("user", [WRITER, READER])
def test_every_way_of_naming_a_file_or_url_is_refused_logged_and_reads_nothing(
        frontend: TestFrontend, secret_dir: Path, caplog: pytest.LogCaptureFixture, index: int, user: str) -> None:
    name, statement, body, extra = _forms(secret_dir)[index]
    http(frontend.url + "/", b"CREATE TABLE IF NOT EXISTS t_files (a String) ENGINE = Memory")
    url = frontend.url_for(user) + "/?" + urlencode({"query": statement, **extra}, quote_via=quote)
    with caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
        reply = http(url, body)
    assert SECRET.encode() not in reply.body, name
    code = reply.headers.get("X-ClickHouse-Exception-Code")
    assert (reply.status, code) == (403, "497"), (name, reply.status, reply.body[:300])
    assert b"(ACCESS_DENIED)" in reply.body and b"Not enough privileges" in reply.body, name
    lines = [r.getMessage() for r in caplog.records if r.name == "sco.clickhouse.security"]
    assert len(lines) == 1 and lines[0].startswith((f"CHS002 user={user} class=", f"CHS008 user={user} class=")), \
        (name, lines)  # CHS008: a table function that names its table by string is refused unread
    assert " object=" in lines[0] and "refused:" in lines[0]
    assert not (secret_dir / "written.txt").exists()


def test_the_forms_table_has_as_many_rows_as_the_parametrisation(secret_dir: Path) -> None:
    assert len(_forms(secret_dir)) == 43  # the parametrisation above covers each one


def test_a_bare_name_that_is_a_file_in_the_servers_directory_is_refused_and_a_missing_table_is_unknown(
        frontend: TestFrontend, secret_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    here = os.getcwd()
    os.chdir(secret_dir)  # chDB resolves bare names against the process's working directory
    try:
        with caplog.at_level(logging.WARNING, logger="sco.clickhouse.security"):
            named = http(frontend.url + "/?" + urlencode({"query": "SELECT * FROM `users.csv`"}))
            missing = http(frontend.url + "/?" + urlencode({"query": "SELECT * FROM no_such_table_here"}))
    finally:
        os.chdir(here)
    assert (named.status, named.headers.get("X-ClickHouse-Exception-Code")) == (403, "497")
    assert SECRET.encode() not in named.body
    assert (missing.status, missing.headers.get("X-ClickHouse-Exception-Code")) == (404, "60")
    assert any(r.getMessage().startswith(f"CHS002 user={WRITER}") for r in caplog.records)


def test_values_rows_with_harmless_expressions_or_literals_are_inserted(frontend: TestFrontend) -> None:
    http(frontend.url + "/", b"CREATE TABLE IF NOT EXISTS t_rows (a String, d Date) ENGINE = Memory")
    http(frontend.url + "/", b"CREATE TABLE IF NOT EXISTS t_files (a String) ENGINE = Memory")
    for statement, body in ((b"INSERT INTO t_rows VALUES ('it''s; -- (x)', '2024-01-02')", None),
                            (b"INSERT INTO t_rows VALUES (concat('a', 'b'), toDate('2024-01-02') + 1)", None),
                            (b"INSERT INTO t_rows FORMAT Values", b"(lower('C'), today())")):
        reply = http(frontend.url + "/?" + urlencode({"query": statement.decode()}), body)
        assert reply.status == 200, (statement, reply.body)
    assert http(frontend.url + "/", b"SELECT count() FROM t_rows").body == b"3\n"
    http(frontend.url + "/", b"INSERT INTO t_files SELECT * FROM values('a String', 'x')")  # not VALUES rows
    assert http(frontend.url + "/", b"SELECT count() FROM t_files WHERE a = 'x'").body == b"1\n"
