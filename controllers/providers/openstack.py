"""The OpenStack adapter of the provider contract, on openstacksdk (ADR-05, ADR-11, ADR-29).

Pools come from flavours (extra specs ``sco:sku_family``, ``sco:size``, ``sco:purchase_model``,
``sco:rate_eur_h``, ``sco:guaranteed_rate_eur_h``) × availability zones (halls) × host aggregates (when the
credential may list them; otherwise the zone stands for its aggregate). Launch is one Nova multi-create call
with the owner tags, metadata and user-data; listing reads the tags back, so "what we own" can be rebuilt from
the provider alone; terminate refuses anything without the owner tags. Nova has no notices, advisories, rate
card, reservations or forward capacity: those come from the provider-contract feeds (``feeds``), when given.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from openstack import exceptions as osexc

from contracts.pools import Pool, PoolCatalogue, PurchaseModel
from contracts.provider import (
    TAG_PREFIX,
    ForwardCapacity,
    Instance,
    InstanceStatus,
    LaunchRequest,
    OwnerTags,
    QuotaHeadroom,
    RateCard,
    RateCardEntry,
    ReclaimReceipt,
    Reservation,
)
from contracts.provider_errors import (
    CapacityUnavailable,
    InvalidRequest,
    NotFound,
    NotOwned,
    ProviderError,
    QuotaExceeded,
)

from .appcred import KeystoneIssuer, RenewingConnection, connect_sdk, keystone_connector
from .feeds import FeedClient
from .node_credentials import KeystoneNodeCredentials

__all__ = ["OpenStackProvider"]

log = logging.getLogger(__name__)

_STATUS = {"BUILD": InstanceStatus.BUILDING, "ACTIVE": InstanceStatus.ACTIVE, "DELETED": InstanceStatus.DELETED,
           "SOFT_DELETED": InstanceStatus.DELETED, "ERROR": InstanceStatus.ERROR}
_QUOTA = re.compile(r"Quota exceeded for (\w+): Requested (\d+), but already used (\d+) of (\d+)")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class OpenStackProvider:
    """``Provider`` on one region's Nova/Glance/Keystone, scoped to the orchestrator's project."""

    def __init__(self, conn: Any, *, region: str, image: str, project: str = "",
                 mutating_hook: Callable[[str], None] | None = None, feeds: FeedClient | None = None,
                 topology: Any = None, clock: Callable[[], datetime] = _utcnow,
                 node_credentials: KeystoneNodeCredentials | None = None) -> None:
        """``topology``: an optional read-only (reader/admin) connection for host aggregates and Placement,
        which Nova's default policy hides from the orchestrator's member credential. ``node_credentials``: issue
        a Keystone application credential per launched instance (off by default: ADR-29, nodes hold none).
        ``conn``: an openstacksdk connection, or a ``RenewingConnection`` (``appcred``) whose credential expires
        and is renewed before it lapses."""
        self._connection = conn
        self._topology = topology
        self._region = region
        self._image_name = image
        self._image_ids: dict[str, str] = {}
        self.project = project
        self._hook = mutating_hook or (lambda op: None)
        self._feeds = feeds
        self._clock = clock
        self._pools: dict[str, tuple[Pool, str, str]] = {}  # pool_id -> (pool, flavour id, zone)
        self._ram_mib: dict[str, int] = {}  # pool_id -> flavour RAM
        self.node_credentials = node_credentials

    @property
    def _conn(self) -> Any:
        """The connection for this call: a ``RenewingConnection`` renews the controller's expiring application
        credential before it lapses (ADR-29); a plain connection is used as it is."""
        current = getattr(self._connection, "current", None)
        return current() if callable(current) else self._connection

    @classmethod
    def from_clouds_yaml(cls, path: Path, cloud: str, **kwargs: Any) -> OpenStackProvider:
        """Connect with an entry of a clouds.yaml (an application credential, ADR-29)."""
        doc = yaml.safe_load(path.read_text())
        try:
            conf = dict(doc["clouds"][cloud])
        except KeyError:
            raise NotFound("cloud", cloud, tuple(doc.get("clouds", {}))) from None
        conf.setdefault("compute_api_version", "2.90")
        kwargs.setdefault("region", conf.get("region_name", "RegionOne"))
        return cls(connect_sdk(**conf), **kwargs)

    @classmethod
    def from_credential_issuer(cls, path: Path, issuer: str, *, clock: Callable[[], datetime] = _utcnow,
                               **kwargs: Any) -> OpenStackProvider:
        """Connect on an application credential that the clouds.yaml entry ``issuer`` (the orchestrator user's
        authority: OpenBao's plugin or a rotation job) issues for one hour and renews before it lapses (ADR-29)."""
        doc = yaml.safe_load(path.read_text())
        try:
            conf = dict(doc["clouds"][issuer])
        except KeyError:
            raise NotFound("cloud", issuer, tuple(doc.get("clouds", {}))) from None
        options = {k: conf[k] for k in ("region_name", "identity_api_version") if k in conf}
        connect = keystone_connector(conf["auth"]["auth_url"], compute_api_version="2.90", **options)
        kwargs.setdefault("region", conf.get("region_name", "RegionOne"))
        renewing = RenewingConnection(KeystoneIssuer(connect_sdk(**conf)), connect, name="sco-controller", clock=clock)
        return cls(renewing, clock=clock, **kwargs)

    @classmethod
    def from_env(cls, **kwargs: Any) -> OpenStackProvider:
        """Connect from ``OS_*`` variables (``OS_AUTH_TYPE=v3applicationcredential``,
        ``OS_APPLICATION_CREDENTIAL_ID``, ``OS_APPLICATION_CREDENTIAL_SECRET``, ``OS_AUTH_URL``)."""
        conn = connect_sdk(load_envvars=True, compute_api_version="2.90")
        kwargs.setdefault("region", conn.config.get_region_name() or "RegionOne")
        return cls(conn, **kwargs)

    @property
    def region(self) -> str:
        """The region this provider serves."""
        return self._region

    # --- catalogue -------------------------------------------------------------------------------------
    def _zones_and_aggregates(self) -> dict[str, list[str]]:
        zones = [z.name for z in self._conn.compute.availability_zones() if z.state.get("available", True)]
        try:
            aggs = list((self._topology or self._conn).compute.aggregates())
        except osexc.ForbiddenException:  # a member credential may not list aggregates: one per zone
            return {z: [z] for z in zones}
        out: dict[str, list[str]] = {z: [] for z in zones}
        for agg in aggs:
            if agg.availability_zone in out:
                out[agg.availability_zone].append(agg.name)
        return {z: sorted(a) or [z] for z, a in out.items()}

    def catalogue(self) -> PoolCatalogue:
        """Pools (SKU family × size × hall × purchase model) with aggregate and hall for correlation."""
        pools: dict[str, tuple[Pool, str, str]] = {}
        halls = self._zones_and_aggregates()
        for flavor in self._conn.compute.flavors(details=True):
            spec = flavor.extra_specs or {}
            if "sco:sku_family" not in spec:
                continue
            model = PurchaseModel(spec.get("sco:purchase_model", "reclaimable"))
            for hall, aggregates in sorted(halls.items()):
                for aggregate in aggregates:
                    pool_id = f"{self._region}-{hall}-{spec['sco:sku_family']}-{spec['sco:size']}-" + (
                        "rc" if model is PurchaseModel.RECLAIMABLE else model.value[:2])
                    if len(aggregates) > 1:
                        pool_id += f"-{aggregate}"
                    pool = Pool(pool_id=pool_id, region=self._region, hall=hall, aggregate=aggregate,
                                sku_family=spec["sco:sku_family"], size=spec["sco:size"], vcpu=flavor.vcpus,
                                memory_gib=max(flavor.ram // 1024, 0), purchase_model=model,
                                rate_eur_h=Decimal(spec.get("sco:rate_eur_h", "0")),
                                guaranteed_rate_eur_h=Decimal(spec.get("sco:guaranteed_rate_eur_h", "0")))
                    pools[pool_id] = (pool, flavor.id, hall)
                    self._ram_mib[pool_id] = flavor.ram
        self._pools = pools
        return PoolCatalogue(pools=tuple(p for p, _, _ in pools.values()), source=f"openstack:{self._region}")

    def _pool(self, pool_id: str) -> tuple[Pool, str, str]:
        if pool_id not in self._pools:
            self.catalogue()
        if pool_id not in self._pools:
            raise NotFound("pool", pool_id, tuple(sorted(self._pools)))
        return self._pools[pool_id]

    # --- feeds -----------------------------------------------------------------------------------------
    def rate_card(self) -> RateCard:
        """The current rate card (one entry per pool, refreshed every five minutes)."""
        if self._feeds is not None:
            return self._feeds.rate_card()
        pools = self.catalogue().pools
        capacity = self.capacity()
        return RateCard(region=self._region, time=self._clock(), entries=tuple(
            RateCardEntry(pool_id=p.pool_id, rate_eur_h=p.rate_eur_h, guaranteed_rate_eur_h=p.guaranteed_rate_eur_h,
                          utilisation=capacity.get(p.pool_id, (0, 0.0))[1],
                          free_instances=capacity.get(p.pool_id, (0, 0.0))[0]) for p in pools))

    def capacity(self) -> dict[str, tuple[int, float]]:
        """Free instances and vCPU utilisation per pool, from Placement inventories and usages of the resource
        providers in each pool's aggregate. Needs ``topology``; empty without it."""
        if self._topology is None:
            return {}
        if not self._pools:
            self.catalogue()
        placement = self._topology.placement
        per_agg: dict[str, tuple[float, float, float, float]] = {}  # free vCPU, free MiB, used vCPU, total vCPU
        for agg in self._topology.compute.aggregates():
            free_cpu = free_mem = used_cpu = total_cpu = 0.0
            found = placement.get(f"/resource_providers?member_of={agg.uuid}", microversion="1.3").json()
            for rp in found.get("resource_providers", []):
                inv = placement.get(f"/resource_providers/{rp['uuid']}/inventories").json()["inventories"]
                use = placement.get(f"/resource_providers/{rp['uuid']}/usages").json()["usages"]
                for rc, inventory in inv.items():
                    cap = (inventory["total"] - inventory.get("reserved", 0)) * inventory.get("allocation_ratio", 1.0)
                    if rc == "VCPU":
                        free_cpu += cap - use.get(rc, 0)
                        used_cpu += use.get(rc, 0)
                        total_cpu += cap
                    elif rc == "MEMORY_MB":
                        free_mem += cap - use.get(rc, 0)
            per_agg[agg.name] = (free_cpu, free_mem, used_cpu, total_cpu)
        out: dict[str, tuple[int, float]] = {}
        for pool_id, (pool, _, _) in self._pools.items():
            if pool.aggregate not in per_agg:
                continue
            free_cpu, free_mem, used, total = per_agg[pool.aggregate]
            fits = min(free_cpu // max(pool.vcpu, 1), free_mem // max(self._ram_mib.get(pool_id, 1), 1))
            out[pool_id] = (max(int(fits), 0), round(used / total, 4) if total else 0.0)
        return out

    def reservations(self, business_unit: str | None = None) -> tuple[Reservation, ...]:
        """Committed capacity, of one business unit or of all when ``business_unit`` is None."""
        return self._feeds.reservations(business_unit) if self._feeds is not None else ()

    def forward_capacity(self, horizon: timedelta) -> tuple[ForwardCapacity, ...]:
        """Expected free reclaimable capacity per pool over the next ``horizon``."""
        return self._feeds.forward_capacity(horizon) if self._feeds is not None else ()

    def quota_headroom(self) -> QuotaHeadroom:
        """The project's quota headroom."""
        a = self._conn.compute.get_limits().absolute
        return QuotaHeadroom(project=self.project, instances_limit=a.instances, instances_used=a.instances_used,
                             vcpu_limit=a.total_cores, vcpu_used=a.total_cores_used,
                             memory_mib_limit=a.total_ram, memory_mib_used=a.total_ram_used)

    # --- acquisition -----------------------------------------------------------------------------------
    def _image(self, name: str | None = None) -> str:
        """The Glance id of ``name`` (default: the configured image), looked up once per name."""
        wanted = name or self._image_name
        if wanted not in self._image_ids:
            image = self._conn.image.find_image(wanted)
            if image is None:
                raise NotFound("image", wanted)
            self._image_ids[wanted] = image.id
        return self._image_ids[wanted]

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        """Launch ``request.count`` instances, all or nothing; raises the provider contract's errors."""
        pool, flavor_id, zone = self._pool(request.pool_id)
        quota = self.quota_headroom()
        if quota.instances_limit >= 0 and quota.instances_used + request.count > quota.instances_limit:
            raise QuotaExceeded("instances", request.count, quota.instances_used, quota.instances_limit, self.project)
        cores = request.count * pool.vcpu
        if quota.vcpu_limit >= 0 and quota.vcpu_used + cores > quota.vcpu_limit:
            raise QuotaExceeded("cores", cores, quota.vcpu_used, quota.vcpu_limit, self.project)
        tags = list(request.tags)
        metadata = {**request.metadata, "sco_pool": pool.pool_id, "sco_workload": request.owner.workload,
                    "sco_partition": request.owner.partition}
        if len(metadata) > 128:
            raise InvalidRequest("metadata", len(metadata), "Nova allows at most 128 metadata items")
        self._hook("launch")
        name = f"{request.name_prefix}-{request.owner.workload}-g{request.owner.generation}"[:60]
        body: dict[str, Any] = {
            "name": name, "imageRef": self._image(request.image), "flavorRef": flavor_id, "networks": "none",
            "tags": tags, "metadata": metadata, "availability_zone": zone, "min_count": request.count,
            "max_count": request.count, "return_reservation_id": True}
        if request.user_data:
            body["user_data"] = base64.b64encode(request.user_data.encode()).decode()
        try:
            resp = self._conn.compute.post("/servers", json={"server": body}, microversion="2.90", raise_exc=False)
            osexc.raise_from_response(resp)
        except osexc.HttpException as exc:
            raise self._translate(exc, request, pool, flavor_id) from exc
        reservation = resp.json()["reservation_id"]
        servers = list(self._conn.compute.servers(details=True, reservation_id=reservation))
        if self.node_credentials is not None:
            for server in servers:
                try:
                    self.node_credentials.issue(server.id)
                except osexc.HttpException as exc:  # the node needs none to run; revocation then finds none
                    log.warning("no Keystone application credential for %s: %s", server.id, exc)
        return tuple(self._instance(s) for s in servers)

    def _translate(self, exc: osexc.HttpException, request: LaunchRequest, pool: Pool, flavor_id: str) -> ProviderError:
        text = f"{exc.details or ''} {exc}"
        m = _QUOTA.search(text)
        if m:
            return QuotaExceeded(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), self.project)
        if "Flavor" in text and ("could not be found" in text or "not found" in text.lower()):
            self._pools.pop(pool.pool_id, None)
            return NotFound("flavour", flavor_id)
        if "No valid host" in text or exc.status_code == 409:
            return CapacityUnavailable(pool.pool_id, request.count, 0, text.strip()[:200])
        return ProviderError(f"launch in pool {pool.pool_id} failed: HTTP {exc.status_code}: {text.strip()[:300]}")

    def _instance(self, server: Any) -> Instance:
        meta = {str(k): str(v) for k, v in (server.metadata or {}).items()}
        created = server.created_at
        launched = datetime.fromisoformat(created.replace("Z", "+00:00")) if created else None
        return Instance(instance_id=server.id, name=server.name or "", region=self._region,
                        pool_id=meta.get("sco_pool"), hall=server.availability_zone or None,
                        status=_STATUS.get(server.status or "", InstanceStatus.ERROR),
                        tags=tuple(server.tags or ()), metadata=meta, launched_at=launched)

    def user_data(self, instance_id: str) -> str | None:
        """The launch's user-data read back from Nova (``UserDataReadback``): ``OS-EXT-SRV-ATTR:user_data`` at
        microversion 2.3, shown to an administrator only by default — so through ``topology`` when given."""
        resp = (self._topology or self._conn).compute.get(f"/servers/{instance_id}", microversion="2.3",
                                                          raise_exc=False)
        if resp.status_code == 404:
            raise NotFound("instance", instance_id)
        server = resp.json().get("server", {}) if resp.status_code == 200 else {}
        if "OS-EXT-SRV-ATTR:user_data" not in server:
            raise ProviderError(f"Nova shows no user-data of {instance_id} to this credential (HTTP "
                                f"{resp.status_code}): give the adapter an administrator's connection as topology")
        encoded = server["OS-EXT-SRV-ATTR:user_data"]
        return None if encoded is None else base64.b64decode(encoded).decode()

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        """Instances in the orchestrator's projects; ``tags`` filters on owner tags."""
        query: dict[str, Any] = {}
        if tags:
            query["tags"] = ",".join(f"{TAG_PREFIX}{k}={v}" for k, v in sorted(tags.items()))
        return tuple(self._instance(s) for s in self._conn.compute.servers(details=True, **query))

    def owned(self) -> tuple[Instance, ...]:
        """Everything SCO owns in the project, from tags alone (ADR-11): the state-rebuild source."""
        return tuple(i for i in self.list_instances() if i.owner is not None)

    def terminate(self, instance_id: str) -> None:
        """Delete an instance of ours; raises NotFound, or NotOwned without the owner tags."""
        try:
            server = self._conn.compute.get_server(instance_id)
        except osexc.NotFoundException:
            raise NotFound("instance", instance_id) from None
        tags = tuple(server.tags or ())
        missing = OwnerTags.missing(tags)
        if missing:
            raise NotOwned(instance_id, missing, tags)
        self._hook("terminate")
        try:
            self._conn.compute.delete_server(server)
        except osexc.NotFoundException:
            raise NotFound("instance", instance_id) from None

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """The provider's reclaim path, for drills (ADR-33): notices now, deletion after the notice window."""
        if self._feeds is None:
            raise ProviderError("Nova has no reclaim API: configure the provider-contract feed URL (reclaimer)")
        self._hook("reclaim")
        return self._feeds.reclaim(instance_ids, drill=drill)
