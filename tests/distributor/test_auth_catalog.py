"""The distributor's pure parts: who may read what (HTTP Basic / bearer against SHA-256 digests) and ETag
matching (RFC 9110 weak comparison)."""

from __future__ import annotations

import base64

import pytest

from distributor import PasswordTable, Principal, allowed, digest, etag_matches

TABLE = PasswordTable(users={"agent.r1.i-1": (digest("pw-1"), "agent"), "controller": (digest("ctl"), "controller")},
                      tokens={digest("tok"): ("controller", "controller")})


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(("header", "expected"), [
    (basic("agent.r1.i-1", "pw-1"), Principal("agent.r1.i-1", "agent")),
    (basic("controller", "ctl"), Principal("controller", "controller")),
    ("Bearer tok", Principal("controller", "controller")),
    ("bearer  tok ", Principal("controller", "controller")),
    (basic("agent.r1.i-1", "pw-2"), None),
    (basic("agent.r1.i-2", "pw-1"), None),
    (basic("agent.r1.i-1", ""), None),
    ("Basic " + base64.b64encode(b"agent.r1.i-1").decode(), None),
    ("Basic !!!not-base64", None),
    ("Bearer wrong", None),
    ("Bearer ", None),
    ("Digest username=x", None),
    ("", None),
    (None, None),
], ids=["agent", "controller-basic", "bearer", "bearer-spaces", "wrong-password", "unknown-user", "empty-password",
        "no-colon", "malformed", "wrong-token", "empty-token", "other-scheme", "empty", "missing"])
def test_only_a_known_credential_is_a_principal(header: str | None, expected: Principal | None) -> None:
    assert TABLE.authenticate(header) == expected


@pytest.mark.parametrize(("role", "kind", "ok"), [
    ("agent", "agent", True), ("agent", "controller", False), ("agent", "metrics", False),
    ("controller", "agent", True), ("controller", "controller", True), ("controller", "metrics", True),
])
def test_agents_read_agent_bundles_and_controllers_read_everything(role: str, kind: str, ok: bool) -> None:
    assert allowed(Principal("x", role), kind) is ok  # type: ignore[arg-type]


def test_a_loaded_table_is_reread_before_each_check() -> None:
    tables = [({"a": (digest("1"), "agent")}, {}), ({"b": (digest("2"), "agent")}, {})]
    table = PasswordTable(load=lambda: tables[0])
    assert table.authenticate(basic("a", "1")) == Principal("a", "agent")
    tables.pop(0)
    assert table.authenticate(basic("a", "1")) is None and table.authenticate(basic("b", "2")) is not None


@pytest.mark.parametrize(("header", "etag", "match"), [
    ('"sha256:ab"', '"sha256:ab"', True),
    ('W/"sha256:ab"', '"sha256:ab"', True),
    ('"x", "sha256:ab"', '"sha256:ab"', True),
    ("*", '"sha256:ab"', True),
    ('"sha256:ac"', '"sha256:ab"', False),
    ("", '"sha256:ab"', False),
    (None, '"sha256:ab"', False),
])
def test_if_none_match_is_compared_weakly_as_rfc_9110_says(header: str | None, etag: str, match: bool) -> None:
    assert etag_matches(header, etag) is match
