"""``SimulatedProvider``: the provider contract over HTTP against a simulated region running out of process
(``sco sim region serve``). The same client works against any service that serves the provider-contract
paths (controllers/simregion/service.py documents them). Notices and advisories arrive on NATS, not here.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.parse
from collections.abc import Callable, Mapping

from pydantic import TypeAdapter

from contracts.pools import Pool, PoolCatalogue
from contracts.provider import Instance, LaunchRequest, QuotaHeadroom, ReclaimReceipt
from contracts.provider_errors import ProviderError
from stores.config import sco_home

from .feeds import FeedClient

__all__ = ["SimulatedProvider", "region_token"]

TOKEN_ENV = "SCO_REGION_TOKEN"


def region_token(identity: str = "controller") -> str | None:
    """The bearer token of ``identity`` (``controller`` or ``drill``) for the simulated region's API:
    ``SCO_REGION_TOKEN``, else the ``region`` section of the stack's ``credentials.json`` ($SCO_HOME or .sco),
    else None (a region served with ``--no-auth``)."""
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    path = sco_home() / "credentials.json"
    try:
        found = json.loads(path.read_text()).get("region", {}).get(identity)
    except (OSError, ValueError):
        return None
    return str(found) if found else None


class SimulatedProvider(FeedClient):
    def __init__(self, base_url: str, *, region: str, mutating_hook: Callable[[str], None] | None = None,
                 timeout_s: float = 5.0, identity: str = "controller", token: str | None = None) -> None:
        super().__init__(base_url, timeout_s=timeout_s, token=token or region_token(identity))
        self._region = region
        self._hook = mutating_hook or (lambda op: None)

    @property
    def region(self) -> str:
        """The region this provider serves."""
        return self._region

    def catalogue(self) -> PoolCatalogue:
        """Pools (SKU family × size × hall × purchase model) with aggregate and hall for correlation."""
        pools = TypeAdapter(tuple[Pool, ...]).validate_python(self.call("GET", "/v1/catalogue"))
        return PoolCatalogue(pools=pools, source=self.base_url)

    def quota_headroom(self) -> QuotaHeadroom:
        """The project's quota headroom."""
        return QuotaHeadroom.model_validate(self.call("GET", "/v1/quota"))

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        """Launch ``request.count`` instances, all or nothing; raises the provider contract's errors."""
        self._hook("launch")
        raw = self.call("POST", "/v1/launch", request.model_dump(mode="json"))
        return TypeAdapter(tuple[Instance, ...]).validate_python(raw)

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        """Instances in the orchestrator's projects; ``tags`` filters on owner tags."""
        raw = self.call("GET", "/v1/instances", query=dict(tags) if tags else None)
        return TypeAdapter(tuple[Instance, ...]).validate_python(raw)

    def user_data(self, instance_id: str) -> str | None:
        """What the instance's launch sent as user-data (``UserDataReadback``), decoded from the region's base64.

        Raises:
            NotFound: no such instance of ours. ProviderError: the region's answer is not base64 UTF-8.
        """
        raw = self.call("GET", f"/v1/instances/{urllib.parse.quote(instance_id)}/user-data")
        encoded = (raw or {}).get("user_data")
        if encoded is None:
            return None
        try:
            return base64.b64decode(encoded, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ProviderError(f"user-data of instance {instance_id} from {self.base_url} is not base64 of UTF-8 "
                                f"text ({exc}); is the URL a simulated region (`sco sim region serve`)?") from None

    def terminate(self, instance_id: str) -> None:
        """Delete an instance of ours; raises NotFound, or NotOwned without the owner tags."""
        self._hook("terminate")
        self.call("DELETE", f"/v1/instances/{urllib.parse.quote(instance_id)}")

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """The provider's reclaim path, for drills (ADR-33): notices now, deletion after the notice window."""
        self._hook("reclaim")
        return super().reclaim(instance_ids, drill=drill)
