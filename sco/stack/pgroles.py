"""PostgreSQL roles of the embedded stack: least privilege per component.

``create_roles`` runs once per ``sco up`` as the superuser: the owner role ``sco_owner`` owns the database
``sco`` (the migrations run as it), one login role per component may only connect. ``grant`` runs as the
owner after the migrations and gives each component what it uses, table by table (``GRANTS``); nothing is
granted to ``PUBLIC``. After ``sco up`` nothing uses the superuser.

| role             | may                                                                                  |
|------------------|--------------------------------------------------------------------------------------|
| sco_controller   | read and write the fleet state; read what analytics put in force; enqueue to outbox  |
| sco_analytics    | read the fleet state; replace the rankings and groups in force; enqueue breach events |
| sco_relay        | read and mark the outbox                                                              |
| sco_ingest       | the outbox only                                                                       |
| sco_reports      | read what is in force and the exclusions                                              |
| sco_approvals    | read the approval requests and decisions; insert a signed decision (its own columns)  |
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from .credentials import PG_DATABASE, PG_OWNER, PG_ROLES

__all__ = ["FLEET_TABLES", "GRANTS", "create_roles", "grant", "grant_component"]

# the fleet state the controller owns (stores/migrations/postgres)
FLEET_TABLES = ("instances", "claims", "plans", "breakers", "spend_reservations", "spends", "partition_leases",
                "approval_requests", "approval_decisions", "controller_cycles", "controller_bundles", "exclusions",
                "contracts_in_force")
IN_FORCE = ("rankings_in_force", "correlation_groups", "in_force_versions")
_RW = "SELECT, INSERT, UPDATE, DELETE"

# role key (PG_ROLES) -> [(privileges, tables)]
GRANTS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "controller": [(_RW, FLEET_TABLES), ("SELECT", (*IN_FORCE, "schema_migrations")), ("SELECT, INSERT", ("outbox",))],
    "analytics": [("SELECT", (*FLEET_TABLES, "schema_migrations")), (_RW, IN_FORCE), ("SELECT, INSERT", ("outbox",))],
    "relay": [("SELECT, UPDATE, DELETE", ("outbox",))],
    "ingest": [("SELECT, INSERT", ("outbox",))],
    "reports": [("SELECT", ("exclusions", "contracts_in_force", "instances", *IN_FORCE))],
    # `sco fallback approvals|approve|deny`: submit a signed answer; only the controller judges it and grants
    "approvals": [("SELECT", ("approval_requests", "approval_decisions")),
                  ("INSERT (decision_id, request_id, approver, decision, amount_eur, signed)",
                   ("approval_decisions",))],
}


def _role_exists(conn: Any, name: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone() is not None


def _login_role(conn: Any, name: str, password: str, extra: str = "") -> None:
    verb = "ALTER" if _role_exists(conn, name) else "CREATE"
    conn.execute(sql.SQL("{} ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION {} PASSWORD {}").format(
        sql.SQL(verb), sql.Identifier(name), sql.SQL(extra), sql.Literal(password)))


def create_roles(conn: Any, passwords: dict[str, str]) -> None:
    """As the superuser (autocommit): the owner and component roles with ``passwords`` (role -> password), the
    database ``sco`` owned by the owner, reachable only by them; the superuser's own password too."""
    conn.execute(sql.SQL("ALTER ROLE postgres PASSWORD {}").format(sql.Literal(passwords["postgres"])))
    _login_role(conn, PG_OWNER, passwords[PG_OWNER])
    for role in PG_ROLES.values():
        _login_role(conn, role, passwords[role], "CONNECTION LIMIT 100")
    if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DATABASE,)).fetchone() is None:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(PG_DATABASE),
                                                                   sql.Identifier(PG_OWNER)))
    for db in (PG_DATABASE, "postgres", "template1"):
        conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(db)))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
        sql.Identifier(PG_DATABASE), sql.SQL(", ").join(sql.Identifier(r) for r in PG_ROLES.values())))


def grant(conn: Any) -> list[str]:
    """As the owner, after the migrations: each component role's grants; returns the statements run.
    A table a migration has not created yet is skipped (the next ``sco up`` grants it)."""
    conn.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
    done: list[str] = []
    for key, role in PG_ROLES.items():
        done += grant_component(conn, key, role)
    return done


def grant_component(conn: Any, key: str, role: str) -> list[str]:
    """The grants of component ``key`` (``GRANTS``) to the login role ``role``; returns the statements run."""
    tables = {r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    done: list[str] = []
    ident = sql.Identifier(role)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(ident))
    for privileges, names in GRANTS[key]:
        present = [t for t in names if t in tables]
        if not present:
            continue
        stmt = sql.SQL("GRANT {} ON TABLE {} TO {}").format(
            sql.SQL(privileges), sql.SQL(", ").join(sql.Identifier(t) for t in present), ident)
        conn.execute(stmt)
        done.append(stmt.as_string(conn))
    if key not in ("reports", "approvals"):
        conn.execute(sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(ident))
    return done
