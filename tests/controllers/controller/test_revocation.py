"""Revocation is honest (ADR-31, issue 14): the ``credentials-revoked`` event says what the revoker really did."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.controller.apply import Actuator
from controllers.controller.decision import Desired
from controllers.controller.revocation import LoggingRevoker, RecordingRevoker, Revocation, Revoker
from controllers.controller.settings import ControllerSettings
from tests.controllers.controller.helpers import PARTITION, T0, contract, contracts


class _Failing:
    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        raise ConnectionError("keystone unreachable")


class _Gone:
    def revoke(self, instance_id: str, spiffe: str) -> Revocation:
        return Revocation(True, "already-gone")


def _attributes(revoker: Revoker) -> dict[str, Any]:
    desired = Desired(ControllerSettings("r1", PARTITION), contracts(contract("etl", "T3")))
    actuator = Actuator(desired, None, None, None, revoker)  # type: ignore[arg-type]
    note = actuator._revoke("i-1", "etl", "p1", "terminated (surplus)")
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
    attributes = _attributes(revoker)
    assert attributes["ok"] is ok and attributes["reason"] == reason
    assert str(attributes["spiffe_id"]).endswith("/node/i-1")
    if reason == "failed":
        assert "keystone unreachable" in str(attributes["detail"])


def test_a_revocation_cannot_claim_success_with_a_failing_reason() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        Revocation(True, "not-configured")
    with pytest.raises(ValueError, match="not one of"):
        Revocation(False, "maybe")
