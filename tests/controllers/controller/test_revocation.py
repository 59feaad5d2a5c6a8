"""Revocation is honest (ADR-31, issue 14): the ``credentials-revoked`` event says what the revoker really did; a
failed one is kept for a retry; the NATS user of an ended instance is removed, composed with Keystone's (issue 16)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.controller.apply import Actuator
from controllers.controller.decision import Desired
from controllers.controller.revocation import (
    CompositeRevoker,
    LoggingRevoker,
    NatsUserRevoker,
    RecordingRevoker,
    Revocation,
    Revoker,
)
from controllers.controller.settings import ControllerSettings
from controllers.controller.userdata import MemoryAgentCredentials
from testkit.builders import PARTITION, T0, contract, contracts


class _Failing:
    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        raise ConnectionError("keystone unreachable")


class _Gone:
    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        return Revocation(True, "already-gone")


class _RetryBook:
    """The store's side of retries: which instances were marked for another attempt, which were settled."""

    def __init__(self) -> None:
        self.failed: list[tuple[str, str]] = []
        self.settled: list[str] = []

    def revocation_failed(self, instance_id: str, now: Any, detail: str) -> None:
        self.failed.append((instance_id, detail))

    def revocation_settled(self, instance_id: str) -> None:
        self.settled.append(instance_id)


def _attributes(revoker: Revoker, book: _RetryBook | None = None) -> dict[str, Any]:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(contract("etl", "T3")))
    actuator = Actuator(desired, None, book or _RetryBook(), None, revoker)  # type: ignore[arg-type]
    note = actuator._revoke("i-1", "etl", "p1", "terminated (surplus)", T0)
    assert note.kind == "credentials-revoked" and note.instance == "i-1"
    event = actuator._event(note, T0)
    return dict(event.attributes)


@pytest.mark.parametrize(("revoker", "ok", "reason"), [
    pytest.param(LoggingRevoker(), False, "not-configured", id="a revoker that revokes nothing says so"),
    pytest.param(RecordingRevoker(), True, "revoked", id="a confirmed revocation is ok"),
    pytest.param(_Gone(), True, "already-gone", id="a credential already gone is ok, and says so"),
    pytest.param(_Failing(), False, "failed", id="an unreachable authority is a failure with its cause"),
])
def test_the_credentials_revoked_event_reports_what_the_revoker_did(revoker: Revoker, ok: bool, reason: str) -> None:
    book = _RetryBook()
    attributes = _attributes(revoker, book)
    assert attributes["ok"] is ok and attributes["reason"] == reason
    assert str(attributes["spiffe_id"]).endswith("/node/i-1")
    if reason == "failed":
        assert "keystone unreachable" in str(attributes["detail"])
        assert book.failed == [("i-1", attributes["detail"])] and not book.settled, "a failure is kept for a retry"
    else:
        assert book.settled == ["i-1"] and not book.failed, "nothing a retry could change"


class _Forgets(MemoryAgentCredentials):
    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.error = error

    def forget(self, region: str, instance_id: str) -> bool:
        if self.error is not None:
            raise self.error
        return super().forget(region, instance_id)


def test_the_nats_revoker_removes_the_instance_user_once_and_then_says_it_is_already_gone() -> None:
    users = _Forgets()
    users.mint("r1", "i-1", "pw")
    users.mint("r1", "i-2", "pw")
    revoker = NatsUserRevoker(users, "r1")
    first = revoker.revoke("i-1", "spiffe://x")
    assert (first.ok, first.reason) == (True, "revoked") and "agent.r1.i-1 removed" in first.detail
    assert users.minted == {("r1", "i-2"): "pw"}, "the sibling keeps its user"
    again = revoker.revoke("i-1", "spiffe://x")
    assert (again.ok, again.reason) == (True, "already-gone")
    broken = NatsUserRevoker(_Forgets(OSError("nats-server did not reload")), "r1").revoke("i-1", "spiffe://x")
    assert (broken.ok, broken.reason) == (False, "failed") and "did not reload" in broken.detail


@pytest.mark.parametrize(("parts", "ok", "reason"), [
    pytest.param([RecordingRevoker(), _Gone()], True, "revoked", id="both done: revoked"),
    pytest.param([_Gone(), _Gone()], True, "already-gone", id="nothing left anywhere: already gone"),
    pytest.param([RecordingRevoker(), _Failing()], False, "failed", id="one failing fails the whole"),
    pytest.param([_Failing(), RecordingRevoker()], False, "failed", id="a raising first part does not stop the rest"),
    pytest.param([LoggingRevoker(), RecordingRevoker()], False, "not-configured",
                 id="one not configured is not ok, and not retried"),
    pytest.param([LoggingRevoker(), _Failing()], False, "failed", id="a failure wins over not-configured"),
])
def test_a_composed_revoker_is_ok_only_when_every_part_is(parts: list[Revoker], ok: bool, reason: str) -> None:
    done = CompositeRevoker(parts).revoke("i-1", "spiffe://x")
    assert (done.ok, done.reason) == (ok, reason)
    recording = [p for p in parts if isinstance(p, RecordingRevoker)]
    assert all(r.banned == ["spiffe://x"] for r in recording), "every part was asked"
    if reason == "failed":
        assert "keystone unreachable" in done.detail


def test_a_revocation_cannot_claim_success_with_a_failing_reason() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        Revocation(True, "not-configured")
    with pytest.raises(ValueError, match="not one of"):
        Revocation(False, "maybe")
