"""stores.postgres: multi-host libpq URLs and the connection that is replaced on its next use after a failover
(the server went away, or turned read-only). The Patroni failover itself: tests/controllers/controller/
test_patroni_failover.py."""

from __future__ import annotations

import logging

import psycopg
import pytest

from sco.stack.services import free_port
from stores import postgres


def _other_host_first(url: str) -> str:
    """``url`` with a loopback port nothing listens on in front of its host, asking for a read-write session."""
    head, rest = url.split("@", 1)
    hostport, tail = rest.split("/", 1)
    return f"{head}@127.0.0.1:{free_port()},{hostport}/{tail}?target_session_attrs=read-write"


def test_a_multi_host_url_lands_on_the_host_that_takes_writes(pg_url: str) -> None:
    url = _other_host_first(pg_url)
    with postgres.connect(url, autocommit=True, reconnect=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,)
        assert conn.port == pg_url.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]


@pytest.mark.services
def test_a_connection_the_server_killed_fails_its_statement_and_the_next_use_reconnects(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stores.postgres")
    with postgres.connect(pg_url, autocommit=True, reconnect=True) as conn, \
            psycopg.connect(pg_url, autocommit=True) as admin:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError) as lost:
            conn.execute("SELECT 1")
        assert postgres.failure_code(lost.value) == postgres.LOST
        assert conn.reconnects == 0  # nothing retried behind the caller's back
        assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
        assert conn.reconnects == 1
    codes = [r.getMessage().split()[0] for r in caplog.records]
    assert codes == [postgres.LOST, postgres.RECONNECTED]


@pytest.mark.services
def test_a_connection_on_a_server_turned_read_only_is_replaced_on_its_next_use(pg_url: str) -> None:
    with postgres.connect(pg_url, autocommit=True, reconnect=True) as conn:
        conn.execute("CREATE TABLE t (n int)")
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")  # what a demoted primary answers
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), conn.transaction():
            conn.execute("INSERT INTO t VALUES (1)")
        with conn.transaction():
            conn.execute("INSERT INTO t VALUES (2)")
        assert conn.reconnects == 1
        assert conn.execute("SELECT n FROM t").fetchall() == [(2,)]


@pytest.mark.services
def test_a_read_only_refusal_in_a_pipeline_replaces_the_connection_too(pg_url: str) -> None:
    """A controller's pass runs in pipeline mode: the refusal comes out of the block's end, not of ``execute``."""
    with postgres.connect(pg_url, autocommit=True, reconnect=True) as conn:
        conn.execute("CREATE TABLE t (n int)")
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), conn.pipeline():
            conn.execute("INSERT INTO t VALUES (1)")
        with conn.pipeline():
            conn.execute("INSERT INTO t VALUES (2)")
        assert conn.reconnects == 1
        assert conn.execute("SELECT n FROM t").fetchall() == [(2,)]


@pytest.mark.services
def test_a_connection_closed_by_its_owner_stays_closed(pg_url: str) -> None:
    conn = postgres.connect(pg_url, autocommit=True, reconnect=True)
    conn.close()
    assert conn.closed
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")
    assert conn.reconnects == 0


def test_when_no_host_takes_a_connection_the_open_fails_with_pg003(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="stores.postgres")
    url = f"postgresql://u:p@127.0.0.1:{free_port()},127.0.0.1:{free_port()}/db?target_session_attrs=read-write"
    with pytest.raises(psycopg.OperationalError):
        postgres.connect(url, reconnect=True, connect_timeout=2)
    assert [r.getMessage().split()[0] for r in caplog.records] == [postgres.NO_PRIMARY]


def test_only_a_lost_or_read_only_server_is_a_failover_failure() -> None:
    assert postgres.failure_code(psycopg.OperationalError("server closed the connection")) == postgres.LOST
    assert postgres.failure_code(psycopg.errors.ReadOnlySqlTransaction("read-only")) == postgres.LOST
    assert postgres.failure_code(psycopg.errors.UniqueViolation("dup")) is None
    assert postgres.failure_code(ValueError("x")) is None
