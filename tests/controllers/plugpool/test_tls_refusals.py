"""The refused-handshake log: one PPL020 line per peer address per window, with the count held back, and every
refusal counted by reason."""

from __future__ import annotations

import logging
import ssl

import pytest

from controllers.plugpool.tls_refusals import OTHER_PEERS, Refusal, RefusalLog, classify
from tests.controllers.plugpool.certs import ManualClock

NO_CERT = Refusal("no certificate", "PEER_DID_NOT_RETURN_A_CERTIFICATE")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "plugpool.tls" and r.levelno == logging.WARNING]


def test_a_flood_from_one_address_writes_one_line_per_window_and_says_how_many_were_held_back(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    refusals = RefusalLog(clock, window=10.0)
    for _ in range(5):
        refusals.refused("10.0.0.7", NO_CERT)
        clock.advance(1.0)
    assert _lines(caplog) == ["PPL020 refused TLS handshake from 10.0.0.7: no certificate "
                              "(PEER_DID_NOT_RETURN_A_CERTIFICATE)"]
    clock.advance(5.0)
    refusals.refused("10.0.0.7", Refusal("unknown CA", "unable to get local issuer certificate"))
    assert _lines(caplog)[1] == ("PPL020 refused TLS handshake from 10.0.0.7: unknown CA (unable to get local "
                                 "issuer certificate) (4 more refused since the last line)")
    assert refusals.counts() == {"no certificate": 5, "unknown CA": 1}


def test_each_address_has_its_own_window(caplog: pytest.LogCaptureFixture) -> None:
    refusals = RefusalLog(ManualClock())
    refusals.refused("10.0.0.7", NO_CERT)
    refusals.refused("10.0.0.8", NO_CERT)
    refusals.refused("10.0.0.7", NO_CERT)
    assert [line.split(":")[0] for line in _lines(caplog)] == [
        "PPL020 refused TLS handshake from 10.0.0.7", "PPL020 refused TLS handshake from 10.0.0.8"]


def test_addresses_beyond_the_table_share_one_line_until_old_entries_expire(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    refusals = RefusalLog(clock, window=10.0, max_peers=2)
    for host in ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"):
        refusals.refused(host, NO_CERT)
    assert [line.split(" from ")[1].split(":")[0] for line in _lines(caplog)] == ["10.0.0.1", "10.0.0.2",
                                                                                   OTHER_PEERS]
    clock.advance(10.0)
    refusals.refused("10.0.0.5", NO_CERT)
    assert _lines(caplog)[-1].startswith("PPL020 refused TLS handshake from 10.0.0.5: ")
    assert refusals.counts() == {"no certificate": 5}


@pytest.mark.parametrize(("exc", "reason"), [
    (TimeoutError("SSL handshake is taking longer than 10 seconds"), "handshake timeout"),
    (ConnectionAbortedError("aborting the connection"), "handshake timeout"),
    (ConnectionResetError(), "closed during handshake"),
    (ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number"), "not TLS"),
    (ssl.SSLError(1, "[SSL: SOMETHING_NEW] something new"), "TLS error"),
])
def test_an_exception_from_the_handshake_names_its_reason(exc: BaseException, reason: str) -> None:
    assert classify(exc).reason == reason
