"""PostgreSQL: no way in without a credential, and each component's credential reaches only its own tables."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from sco.stack.credentials import PG_ROLES

from .conftest import Probed, SecuredStack

pytestmark = pytest.mark.services


def test_nobody_cannot_connect_as_the_superuser_without_or_with_a_guessed_password(probed: Probed) -> None:
    probed.refused("pg_superuser_without_password", "no password supplied")
    probed.refused("pg_superuser_guessed_password", 'password authentication failed for user "postgres"')
    probed.refused("pg_owner_without_password", "no password supplied")
    probed.refused("pg_unix_socket")  # no Unix socket at all: loopback TCP with SCRAM is the only way in
    assert probed.results["whoami"]["error"] != "0", "the probes ran as root, not as nobody"
    assert probed.after == probed.before


def test_copy_to_program_is_out_of_reach_of_nobody_and_of_every_component_role(
        probed: Probed, secured_stack: SecuredStack, tmp_path: Path) -> None:
    probed.refused("pg_copy_from_program", "no password supplied")
    marker = tmp_path / "pwned"
    for component in PG_ROLES:
        with psycopg.connect(secured_stack.url(component, "postgres"), autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="external program"):
                conn.execute(f"COPY (SELECT 1) TO PROGRAM 'touch {marker}'")
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="external program"):
                conn.execute(f"COPY breakers FROM PROGRAM 'touch {marker}'")
    assert not marker.exists()


def test_the_fleet_tables_are_writable_only_with_the_controllers_credential(
        probed: Probed, secured_stack: SecuredStack) -> None:
    probed.refused("pg_controller_without_password", "no password supplied")
    for component in ("analytics", "relay", "ingest", "reports", "approvals"):
        with psycopg.connect(secured_stack.url(component, "postgres"), autocommit=True) as conn:
            for statement in ("UPDATE breakers SET state = 'closed'", "DELETE FROM spend_reservations",
                              "INSERT INTO partition_leases (region, partition) VALUES ('r1', 'x')"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table"):
                    conn.execute(statement)
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for schema"):
                conn.execute("CREATE TABLE breakers_shadow (x int)")
    with psycopg.connect(secured_stack.owner_url) as conn:
        assert conn.execute("SELECT state FROM breakers WHERE partition = 'r1/hpc'").fetchone() == ("open",)
    assert probed.after == probed.before


def test_each_component_role_has_what_it_uses(secured_stack: SecuredStack) -> None:
    with psycopg.connect(secured_stack.url("analytics", "postgres")) as conn:
        conn.execute("DELETE FROM rankings_in_force WHERE region = 'nowhere'")  # replaces rankings in force
        assert conn.execute("SELECT count(*) FROM breakers").fetchone() == (1,)  # reads the fleet
        conn.execute("INSERT INTO outbox (event_id, subject, payload) VALUES (gen_random_uuid(), "
                     "'sco.events.r1.contract-breach', '{}')")  # enqueues the contract-breach events
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE outbox SET sent_at = now()")  # only the relay marks rows sent
        conn.rollback()
    with psycopg.connect(secured_stack.url("relay", "postgres")) as conn:
        conn.execute("SELECT count(*) FROM outbox")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT count(*) FROM breakers")  # the outbox only
    with psycopg.connect(secured_stack.url("approvals", "postgres")) as conn:
        conn.execute("SELECT count(*) FROM approval_requests")  # lists the requests
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE approval_requests SET state = 'granted'")  # only the arbiter grants
    with psycopg.connect(secured_stack.url("controller", "postgres")) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM rankings_in_force")  # analytics' table: read only for the controller


def test_the_superuser_is_in_no_url_sco_up_hands_out_and_pg_hba_trusts_no_one(secured_stack: SecuredStack) -> None:
    text = (secured_stack.home / "stack.json").read_text()
    assert not re.search(r"://postgres[:@]", text)
    hba = (secured_stack.home / "postgres" / "pgdata" / "pg_hba.conf").read_text()
    rules = [line.split() for line in hba.splitlines() if line.strip() and not line.startswith("#")]
    assert rules and {r[0] for r in rules} == {"host"} and {r[-1] for r in rules} == {"scram-sha-256"}
    assert {r[3] for r in rules} == {"127.0.0.1/32", "::1/128"}
