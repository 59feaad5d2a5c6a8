"""The bundle distributor's ``Authenticator`` on the stack's credentials (``$SCO_HOME/credentials.json``): every
minted agent logs in as its own user ``agent.<region>.<instance>`` with its password (the one its cloud-config
carries), the controller as ``controller`` with its stack password (HTTP Basic, or that password as a bearer
token). The file is re-read when it changes, so an instance minted a moment ago is let in."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from contracts.subjects import agent_nats_name
from distributor.auth import PasswordTable, Role, digest
from stores.config import sco_home

from .credentials import CREDENTIALS_FILE

__all__ = ["stack_authenticator"]

Table = tuple[Mapping[str, tuple[str, Role]], Mapping[str, tuple[str, Role]]]


def _table(doc: dict[str, object]) -> Table:
    users: dict[str, tuple[str, Role]] = {}
    agents = doc.get("agents") or {}
    assert isinstance(agents, dict)
    for key, password in agents.items():
        region, _, instance = str(key).partition("/")
        users[agent_nats_name(region, instance)] = (digest(str(password)), "agent")
    nats = doc.get("nats") or {}
    assert isinstance(nats, dict)
    tokens: dict[str, tuple[str, Role]] = {}
    if nats.get("controller"):
        users["controller"] = (digest(str(nats["controller"])), "controller")
        tokens[digest(str(nats["controller"]))] = ("controller", "controller")
    return users, tokens


def stack_authenticator(home: Path | None = None) -> PasswordTable:
    """A ``PasswordTable`` that follows ``<home>/credentials.json``.

    Raises:
        FileNotFoundError: the stack has no credentials yet (run ``sco up``).
    """
    path = (home or sco_home()).resolve() / CREDENTIALS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run `sco up` first (the distributor admits the stack's "
                                "agents and controller only)")
    seen: list[object] = [None, ({}, {})]

    def load() -> Table:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        if seen[0] != key:
            seen[0], seen[1] = key, _table(json.loads(path.read_text()))
        table = seen[1]
        assert isinstance(table, tuple)
        return table

    def scopes() -> Mapping[str, str]:
        """Each agent's partition when its mint named one (``mint_agent(partition=)``), else its region."""
        doc = json.loads(path.read_text())
        partitions = doc.get("agent_partitions") or {}
        out = {}
        for key in doc.get("agents") or {}:
            region, _, instance = str(key).partition("/")
            out[agent_nats_name(region, instance)] = str(partitions.get(key) or region)
        return out

    return PasswordTable(load=load, scopes=scopes)
