"""The controller's own credential on the real Keystone of the OpenStack test bed (ADR-29, issue 14): an
application credential that expires in an hour, renewed before it lapses, the old one deleted — and the provider
keeps working across the switch."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.testbeds import OPENSTACK_CLOUDS

pytestmark = [
    pytest.mark.xdist_group("openstack-bed"),
    pytest.mark.testbed,
    pytest.mark.filterwarnings("ignore::PendingDeprecationWarning:openstack.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:openstack.*"),
]


class Clock:
    """Keystone's own clock is real; the controller's is moved forward to reach the renewal lead."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture()
def renewing() -> Iterator[tuple[Any, Any, Clock]]:
    if not OPENSTACK_CLOUDS.exists():
        pytest.fail(f"{OPENSTACK_CLOUDS} missing: run deploy/testbed/openstack/up")
    import yaml

    from controllers.providers.openstack import OpenStackProvider

    doc = yaml.safe_load(OPENSTACK_CLOUDS.read_text())
    if "sco-testbed-issuer" not in doc["clouds"]:
        pytest.fail(f"{OPENSTACK_CLOUDS} has no sco-testbed-issuer entry: run deploy/testbed/openstack/up again")
    clock = Clock()
    provider = OpenStackProvider.from_credential_issuer(OPENSTACK_CLOUDS, "sco-testbed-issuer", clock=clock,
                                                        image=doc["sco"]["image"], project=doc["sco"]["project"])
    renewing = provider._connection
    yield provider, renewing, clock
    issuer = renewing._issuer
    if renewing.credential is not None:
        issuer.delete(renewing.credential.id)


def _ids(issuer: Any) -> set[str]:
    return {c.id for c in issuer._conn.identity.application_credentials(issuer.user_id)}


def _authenticates(credential: Any) -> bool:
    from keystoneauth1 import exceptions as ksexc
    from openstack import exceptions as osexc

    from controllers.providers.appcred import keystone_connector

    try:
        keystone_connector("http://127.0.0.1:5000/v3", region_name="RegionOne")(credential).authorize()
    except (ksexc.ClientException, osexc.SDKException) as exc:
        # a deleted credential: Keystone answers 404 (no such application credential) or 401
        assert "404" in str(exc) or "401" in str(exc), exc
        return False
    return True


def test_the_controller_connects_on_an_hour_long_credential_and_renews_it_before_it_lapses(
        renewing: tuple[Any, Any, Clock]) -> None:
    provider, conn, clock = renewing
    pools = provider.catalogue().pools                       # the first call issues the credential
    first = conn.credential
    assert pools and first is not None
    issuer = conn._issuer
    listed = next(c for c in issuer._conn.identity.application_credentials(issuer.user_id) if c.id == first.id)
    expires = datetime.fromisoformat(listed.expires_at.rstrip("Z")).replace(tzinfo=UTC)
    assert abs(expires - (clock.now + timedelta(hours=1))) < timedelta(seconds=2)  # Keystone will end it

    clock.now += timedelta(minutes=30)
    provider.list_instances({"workload": "nobody-launches-this"})
    assert conn.credential is first                           # 30 min left: no renewal yet

    clock.now += timedelta(minutes=16)                        # 14 min left: inside the 15-minute lead
    assert provider.catalogue().pools                         # the call runs on the renewed credential
    second = conn.credential
    assert second is not None and second.id != first.id
    assert first.id not in _ids(issuer) and second.id in _ids(issuer)   # the old one is deleted in Keystone
    assert not _authenticates(first) and _authenticates(second)
