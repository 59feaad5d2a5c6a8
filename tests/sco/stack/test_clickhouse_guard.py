"""The access decision, as tables: chDB's own parse of each statement (``EXPLAIN AST`` and
``formatQuerySingleLine``, nothing executed) read into what it needs, and the policy of ``users.xml`` applied.
Every form that reaches outside the database needs a source privilege no user holds (whatever the spelling:
case, comments, backticks, escapes, Unicode spaces and quotes, a path as a table name); the harmless lookalikes
(a column or table named ``file``, the string ``'file('``) pass; a readonly profile only reads."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sco.stack.clickhouse_http.access import Access, names_a_path, overlay_source
from sco.stack.clickhouse_http.gate import AstReader
from sco.stack.clickhouse_http.guard import Refusal, check_settings, decide
from sco.stack.clickhouse_http.policy import load_policy
from sco.stack.clickhouse_http.sqltokens import tokenize
from sco.stack.clickhouse_http.statements import analyse
from sco.stack.clickhouse_http.values import insert_head

POLICY = load_policy()
WRITER, READER = POLICY.for_profile("default"), POLICY.for_profile("readonly")

OUTSIDE = [
    "SELECT * FROM file('/etc/shadow', 'LineAsString')",
    "select * from FILE('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file /**/ ('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file /* a /* nested */ comment */ ('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file -- comment\n('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file # comment\n('/etc/shadow', 'LineAsString')",
    "SELECT * FROM `file`('/etc/shadow', 'LineAsString')",
    'SELECT * FROM "file"(\'/etc/shadow\', \'LineAsString\')',
    "SELECT * FROM `fil\\x65`('/etc/shadow', 'LineAsString')",
    "SELECT * FROM \u201cfile\u201d('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file\u00a0('/etc/shadow', 'LineAsString')",
    "SELECT * FROM file\u200b('/etc/shadow', 'LineAsString')",
    "SELECT file('/etc/shadow')",
    "SELECT * FROM url('http://169.254.169.254/latest/meta-data/', 'LineAsString')",
    "SELECT * FROM urlCluster('c', 'http://x/', 'LineAsString')",
    "SELECT * FROM s3('http://x/b/k', 'CSV')",
    "SELECT * FROM s3Cluster('c', 'http://x/b/k', 'CSV')",
    "SELECT * FROM gcs('http://x/b/k', 'CSV')",
    "SELECT * FROM azureBlobStorage('conn', 'c', 'b')",
    "SELECT * FROM hdfs('hdfs://x/y', 'CSV')",
    "SELECT * FROM remote('127.0.0.1:9000', system.one)",
    "SELECT * FROM remoteSecure('127.0.0.1:9440', system.one)",
    "SELECT * FROM cluster('default', system.one)",
    "SELECT * FROM clusterAllReplicas('default', system.one)",
    "SELECT * FROM mysql('h:3306', 'd', 't', 'u', 'p')",
    "SELECT * FROM postgresql('h:5432', 'd', 't', 'u', 'p')",
    "SELECT * FROM jdbc('jdbc:x', 't')",
    "SELECT * FROM odbc('DSN=x', 't')",
    "SELECT * FROM sqlite('/etc/x.db', 't')",
    "SELECT * FROM mongodb('h:27017', 'd', 'c', 'u', 'p', 'x String')",
    "SELECT * FROM redis('h:6379', 'k', 'k String')",
    "SELECT * FROM executable('id', 'TSV', 'x String')",
    "SELECT * FROM icebergLocal('/etc')",
    "SELECT * FROM deltaLake('http://x/')",
    "INSERT INTO t SELECT * FROM input('x String')",
    "SELECT 1 INTO OUTFILE '/tmp/sco-guard-x'",
    "SELECT 1 into /**/ outfile '/tmp/sco-guard-x'",
    "INSERT INTO t FROM INFILE '/etc/shadow' FORMAT CSV",
    "SYSTEM SHUTDOWN",
    "system reload config",
    "BACKUP TABLE t TO Disk('backups', '1.zip')",
    "RESTORE TABLE t FROM File('/tmp/x')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM `/etc/passwd`",
    "SELECT * FROM default.`/etc/passwd`",
    "SELECT * FROM '/etc/*'",
    "SELECT * FROM 'http://169.254.169.254/latest/meta-data/'",
    "SELECT * FROM (SELECT * FROM '/etc/passwd')",
    "WITH x AS (SELECT * FROM '/etc/passwd') SELECT * FROM x",
    "SELECT 1 WHERE 1 IN (SELECT * FROM '/etc/passwd')",
    "DESCRIBE TABLE '/etc/passwd'",
    "EXPLAIN PIPELINE SELECT * FROM file('/etc/passwd')",
    "CREATE VIEW v AS SELECT * FROM '/etc/passwd'",
    "ATTACH TABLE t FROM '/var/lib/x' (a Int32) ENGINE = MergeTree ORDER BY a",
    "INSERT INTO FUNCTION file('/tmp/sco-guard-x', 'LineAsString') SELECT 'a'",
    "INSERT INTO TABLE FUNCTION file('/tmp/sco-guard-x', 'LineAsString') SELECT 'a'",
    "CREATE TABLE t (a String) ENGINE = File(LineAsString, '/etc/shadow')",
    "CREATE TABLE t (a String) ENGINE URL('http://x/', CSV)",
    "CREATE TABLE t (a String) ENGINE = S3('http://x/b/k', 'CSV')",
    "CREATE TABLE t (a String) ENGINE = Kafka SETTINGS kafka_broker_list = 'h:9092'",
    "CREATE TABLE t (a String) ENGINE = EmbeddedRocksDB(0, '/tmp/x') PRIMARY KEY a",
    "CREATE TABLE t (a String) ENGINE = Distributed(c, d, t)",
    "CREATE TABLE t AS file('/etc/shadow', 'LineAsString')",
    "CREATE TABLE t ENGINE = Memory AS SELECT * FROM file('/etc/shadow', 'LineAsString')",
    "CREATE TABLE t (a Int32) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = local, path = '/etc/')",
    "CREATE TABLE t (a Int32) ENGINE = MergeTree ORDER BY a SETTINGS storage_policy = 'x'",
    "CREATE DATABASE d ENGINE = MySQL('h:3306', 'd', 'u', 'p')",
    "CREATE DATABASE d ENGINE = Filesystem('/etc')",
    "CREATE DICTIONARY d (a UInt64) PRIMARY KEY a SOURCE(FILE(path '/etc/shadow' format 'CSV')) "
    "LAYOUT(FLAT()) LIFETIME(0)",
    "CREATE DICTIONARY d (a UInt64) PRIMARY KEY a SOURCE(HTTP(url 'http://x/' format 'CSV')) LAYOUT(FLAT()) "
    "LIFETIME(0)",
    "CREATE DICTIONARY d (a UInt64) PRIMARY KEY a SOURCE(CLICKHOUSE(host 'h' table 't')) LAYOUT(FLAT()) "
    "LIFETIME(0)",
    "ALTER TABLE t FETCH PARTITION 'x' FROM '/clickhouse/tables/t'",
    "SELECT 1 FORMAT Template SETTINGS format_template_resultset = '/etc/shadow'",
    "SET format_schema = '/etc/shadow:M'",
]
ACCESS = ["GRANT ALL ON *.* TO sco", "REVOKE SELECT ON *.* FROM reader", "CREATE USER x IDENTIFIED BY 'p'",
          "ALTER USER sco SETTINGS PROFILE 'default'", "DROP ROLE r", "CREATE SETTINGS PROFILE p SETTINGS readonly = 0",
          "CREATE ROW POLICY p ON t USING 1 TO ALL", "SET ROLE ALL", "SET DEFAULT ROLE ALL TO sco",
          "CREATE NAMED COLLECTION c AS url = 'http://x/'"]
HARMLESS = [
    "SELECT file FROM t",
    "SELECT file, url, s3 FROM t WHERE remote = 1",
    "SELECT 'file(' || '/etc/shadow' || ')'",
    "SELECT * FROM t WHERE s = 'SYSTEM SHUTDOWN; INTO OUTFILE'",
    "SELECT 1 -- file('/etc/shadow')",
    "SELECT /* url('http://x/') */ 1",
    "SELECT $$file('/etc/shadow')$$",
    "SELECT `file` FROM `url`",
    "CREATE TABLE file (file String, url String) ENGINE = MergeTree ORDER BY file",
    "CREATE TABLE IF NOT EXISTS db.url (a Int32) ENGINE = Memory",
    "INSERT INTO file (file) VALUES ('x')",
    "SELECT domain(url), URLHierarchy(url), filesystemAvailable() FROM t",
    "SELECT * FROM numbers(10)",
    "SELECT * FROM generateRandom('a Int32') LIMIT 1",
    "CREATE TABLE t (d Date, a Int32) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(d) ORDER BY (d, a) "
    "TTL d + INTERVAL 1 DAY SETTINGS index_granularity = 8192",
    "CREATE DATABASE d ENGINE = Atomic",
    "CREATE MATERIALIZED VIEW v TO t2 AS SELECT * FROM t",
    "CREATE DICTIONARY d (a UInt64) PRIMARY KEY a SOURCE(CLICKHOUSE(table 't')) LAYOUT(FLAT()) LIFETIME(0)",
    "SET max_threads = 2, max_block_size = 1000",
    "SELECT 1 SETTINGS max_threads = 1 FORMAT JSON",
    "ALTER TABLE t DELETE WHERE 1 SETTINGS mutations_sync = 1",
    "EXCHANGE TABLES a AND b",
]


@pytest.fixture(scope="module")
def explain() -> Iterator[AstReader]:
    reader = AstReader(":memory:")
    yield reader
    reader.close()


def _access(explain: AstReader, sql: str) -> Access:
    parsed = explain.parse(sql)
    access = analyse(parsed.ast, parsed.canonical, "default")
    for name in access.overlay:  # what the gate adds: no table exists in this empty engine
        if names_a_path(name):
            access.need(overlay_source(name), None, None, name)
    return access


def _decide(explain: AstReader, sql: str, readonly: bool = False) -> Refusal | None:
    return decide("reader" if readonly else "sco", READER if readonly else WRITER, _access(explain, sql))


@pytest.mark.parametrize("sql", OUTSIDE)
def test_each_form_that_reaches_outside_is_refused_for_every_user(explain: AstReader, sql: str) -> None:
    refusal = _decide(explain, sql)
    assert refusal is not None, sql
    assert (refusal.code, refusal.log_code) in ((497, "CHS002"), (452, "CHS004"), (497, "CHS007")), (sql, refusal)
    as_reader = _decide(explain, sql, readonly=True)
    assert as_reader is not None and as_reader.code in (497, 452, 164), (sql, as_reader)


@pytest.mark.parametrize("sql", ACCESS)
def test_access_management_is_refused_so_no_user_changes_its_profile(explain: AstReader, sql: str) -> None:
    for readonly in (False, True):
        refusal = _decide(explain, sql, readonly)
        assert refusal is not None and (refusal.code, refusal.name, refusal.log_code) == (
            497, "ACCESS_DENIED", "CHS006"), (sql, refusal)


@pytest.mark.parametrize("sql", HARMLESS)
def test_harmless_lookalikes_pass_for_a_default_user(explain: AstReader, sql: str) -> None:
    assert _decide(explain, sql) is None


@pytest.mark.parametrize("sql", ["INSERT INTO t VALUES (1)", "CREATE TABLE t (a Int32) ENGINE = Memory",
                                 "DROP TABLE t", "ALTER TABLE t DELETE WHERE 1", "TRUNCATE TABLE t",
                                 "CREATE TEMPORARY TABLE t (a Int32)", "OPTIMIZE TABLE t", "RENAME TABLE a TO b",
                                 "SYSTEM FLUSH LOGS", "KILL QUERY WHERE 1"])
def test_a_readonly_user_is_refused_every_write_ddl_and_setting_with_164(explain: AstReader, sql: str) -> None:
    refusal = _decide(explain, sql, readonly=True)
    assert refusal is not None and (refusal.code, refusal.name, refusal.log_code) == (164, "READONLY", "CHS003")
    assert _decide(explain, sql) is None  # the same statement is a default user's to run


@pytest.mark.parametrize("sql", ["SET max_threads = 1", "SELECT 1 SETTINGS max_threads = 1"])
def test_a_readonly_user_changes_no_setting(explain: AstReader, sql: str) -> None:
    refusal = _decide(explain, sql, readonly=True)
    assert refusal is not None and (refusal.code, refusal.log_code) == (164, "CHS003")
    assert "'max_threads'" in refusal.message


@pytest.mark.parametrize("sql", ["SELECT 1", "WITH 1 AS x SELECT x", "SHOW TABLES", "DESCRIBE TABLE t",
                                 "EXISTS TABLE t", "EXPLAIN SELECT 1", "(SELECT 1) UNION ALL (SELECT 2)",
                                 "SELECT 1 SETTINGS max_execution_time = 10"])
def test_a_readonly_user_reads(explain: AstReader, sql: str) -> None:
    assert _decide(explain, sql, readonly=True) is None


def test_url_settings_are_checked_against_the_profile() -> None:
    assert check_settings([("max_threads", "4")], "sco", WRITER) is None
    assert check_settings([("readonly", "1")], "sco", WRITER) is None  # a default user may make itself read-only
    assert check_settings([("http_max_field_name_size", "1000"), ("distributed_ddl_task_timeout", "5")], "sco",
                          WRITER) is None
    for name, value in (("max_threads", "64"), ("allow_ddl", "0"), ("format_schema", "/etc/shadow:M"),
                        ("max_execution_time", "100000"), ("max_threads", "lots")):
        fixed = check_settings([("max_threads", "1"), (name, value)], "sco", WRITER)
        assert fixed is not None and (fixed.code, fixed.name, fixed.log_code) == (
            452, "SETTING_CONSTRAINT_VIOLATION", "CHS004"), (name, value)
    readonly = check_settings([("readonly", "0")], "reader", READER)
    assert readonly is not None and readonly.code == 164 and "'readonly'" in readonly.message
    assert check_settings([("max_execution_time", "60")], "reader", READER) is None  # changeable_in_readonly
    over = check_settings([("max_execution_time", "6000")], "reader", READER)
    assert over is not None and over.code == 452


def test_the_tokenizer_decodes_quotes_and_drops_comments() -> None:
    tokens = tokenize("SeLeCt `fil\\x65` /* x /* y */ z */ , 'it''s' -- c\n \u201cA\u201d\u200b(")
    assert [(t.kind, t.text) for t in tokens] == [
        ("word", "select"), ("ident", "file"), ("punct", ","), ("string", "it's"), ("ident", "a"), ("punct", "(")]


def test_an_unknown_engine_or_table_function_is_refused_unread(explain: AstReader) -> None:
    for sql in ("CREATE TABLE t (a Int32) ENGINE = NoSuchEngine", "SELECT * FROM noSuchTableFunction(1)"):
        refusal = _decide(explain, sql)
        assert refusal is not None and (refusal.code, refusal.log_code) == (497, "CHS008"), sql


def test_the_parse_is_not_asked_about_two_statements(explain: AstReader) -> None:
    assert explain("SELECT 1; SYSTEM SHUTDOWN") is None  # chDB counts the statements first: nothing runs


_ROWS = ", ".join(f"({i}, 'row-{i}, it''s \\' file(x)', {i * 0.5}e3)" for i in range(500))


@pytest.mark.parametrize("tail", [", (1, file('/etc/shadow'), 2)", ", (1, `file`('/etc/shadow'), 2)",
                                  " -- '\n, (file(char(47, 101, 116, 99))) -- '",
                                  " /* ' */ , (url(char(104))) /* ' */"])
def test_a_long_insert_values_is_read_whole_when_its_rows_are_more_than_literals(tail: str) -> None:
    assert insert_head(f"INSERT INTO t VALUES {_ROWS}{tail}") is None


def test_a_long_insert_values_of_literals_is_parsed_up_to_values(explain: AstReader) -> None:
    head = insert_head(f"INSERT INTO `t` VALUES {_ROWS}")
    assert head == "INSERT INTO `t` VALUES"
    assert _decide(explain, head) is None
    assert _decide(explain, head, readonly=True) is not None  # still readonly's no
