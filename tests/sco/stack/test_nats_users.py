"""Minting a NATS user into a running server returns only once the server takes it (a reload is asynchronous;
an agent started at once was refused and backed off for seconds, missing its notice on the first channel)."""

from __future__ import annotations

from sco.stack import natsserver
from sco.stack.credentials import NatsUser
from testkit.nats import NatsProcess


def test_a_user_added_by_reload_is_accepted_when_add_users_returns_and_a_wrong_password_never_is(
        nats_server: NatsProcess) -> None:
    assert not natsserver.nats_accepts(nats_server.port, "late", "pw-late")  # not a user yet
    nats_server.add_users([NatsUser("late", "pw-late")])
    assert natsserver.nats_accepts(nats_server.port, "late", "pw-late")
    assert not natsserver.nats_accepts(nats_server.port, "late", "wrong")
    assert natsserver.nats_accepts(nats_server.port, "admin", nats_server.users[0].password)
