"""The controller's own application credential is renewed before it lapses (ADR-29), with doubles for the issuer
and the connection; the real Keystone is in ``test_appcred_keystone``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from controllers.providers.appcred import AppCredential, CredentialLapsed, RenewingConnection, renewal_due

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _cred(minutes_left: float) -> AppCredential:
    return AppCredential("c", "s", T0 + timedelta(minutes=minutes_left))


@pytest.mark.parametrize(("current", "due"), [
    (None, True),              # nothing yet
    (_cred(60), False),        # fresh
    (_cred(15.5), False),      # just outside the lead
    (_cred(15), True),         # the lead reached
    (_cred(1), True),
    (_cred(-5), True),         # lapsed
])
def test_a_credential_is_renewed_once_less_than_the_lead_is_left(current: AppCredential | None, due: bool) -> None:
    assert renewal_due(current, T0, timedelta(minutes=15)) is due


@dataclass
class Issuer:
    fail: bool = False
    issued: list[AppCredential] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def issue(self, name: str, expires_at: datetime) -> AppCredential:
        if self.fail:
            raise RuntimeError("issuer unreachable")
        made = AppCredential(f"cred-{len(self.issued) + 1}", f"secret-{len(self.issued) + 1}", expires_at)
        self.issued.append(made)
        return made

    def delete(self, credential_id: str) -> None:
        self.deleted.append(credential_id)


@dataclass
class Conn:
    credential: AppCredential
    authorized: int = 0

    def authorize(self) -> str:
        self.authorized += 1
        return "token"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _renewing(issuer: Issuer, clock: Clock) -> RenewingConnection:
    return RenewingConnection(issuer, Conn, name="sco-controller", clock=clock)


def test_the_first_use_issues_an_hour_long_credential_and_proves_it_before_using_it() -> None:
    issuer, clock = Issuer(), Clock()
    conn = _renewing(issuer, clock).current()
    assert isinstance(conn, Conn) and conn.authorized == 1
    assert [c.expires_at for c in issuer.issued] == [T0 + timedelta(hours=1)]


def test_a_credential_is_replaced_before_it_lapses_and_the_old_one_deleted_after_the_switch() -> None:
    issuer, clock = Issuer(), Clock()
    renewing = _renewing(issuer, clock)
    first = renewing.current()
    clock.now = T0 + timedelta(minutes=44)
    assert renewing.current() is first and issuer.deleted == []       # 16 min left: still in use
    clock.now = T0 + timedelta(minutes=45, seconds=1)
    second = renewing.current()
    assert second is not first and second.credential.id == "cred-2"
    assert second.credential.expires_at == clock.now + timedelta(hours=1)
    assert issuer.deleted == ["cred-1"] and renewing.renewals == 2


def test_a_failed_renewal_keeps_the_current_credential_until_it_lapses_then_says_what_to_fix() -> None:
    issuer, clock = Issuer(), Clock()
    renewing = _renewing(issuer, clock)
    first = renewing.current()
    issuer.fail = True
    clock.now = T0 + timedelta(minutes=50)
    assert renewing.current() is first and renewing.failures == 1     # 10 min left: keep working, retry later
    clock.now = T0 + timedelta(minutes=61)
    with pytest.raises(CredentialLapsed, match=r"cred-1 expired at 2026-12-01T10:00:00\+00:00.*issuer unreachable"):
        renewing.current()
    issuer.fail = False                                                # the issuer is back: the next use recovers
    assert renewing.current().credential.id == "cred-2"
    assert issuer.deleted == ["cred-1"]


def test_the_secret_never_appears_in_a_credentials_text() -> None:
    text = repr(AppCredential("id-1", "s3cret", T0))
    assert "s3cret" not in text and "id-1" in text
