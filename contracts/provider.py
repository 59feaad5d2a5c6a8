"""The written provider contract (ADR-05): what SCO needs from the capacity provider.

One ``Provider`` protocol and frozen data types. The OpenStack adapter and the simulated region implement it;
controllers, orchestration and the replay simulator consume it.

Five commitments: a hard notice ≥ 120 s before deletion (``notice_subject``, mirrored in instance metadata),
an advisory when a pool is forecast to be reclaimed (``advisory_subject``), a rate card per pool every five
minutes, reservations and forward capacity, and a reclaim API for drills (ADR-33). Plus acquisition:
launch many instances in one call with tags, metadata and user-data; list by tag; terminate only what
carries our tags (ADR-11, ADR-29). ``UserDataReadback``: an instance's user-data as the provider holds it (Nova's
``OS-EXT-SRV-ATTR:user_data``), for whoever may see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Protocol, runtime_checkable
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .pools import Pool, PoolCatalogue, PurchaseModel
from .provider_errors import (
    CapacityUnavailable,
    InvalidRequest,
    NotFound,
    NotOwned,
    ProviderError,
    QuotaExceeded,
    Throttled,
)

__all__ = [
    "NOTICE_SECONDS",
    "OWNER_TAG_KEYS",
    "TAG_PREFIX",
    "USER_DATA_LIMIT_B64",
    "Advisory",
    "CapacityUnavailable",
    "Clock",
    "ForwardCapacity",
    "Instance",
    "InstanceStatus",
    "InvalidRequest",
    "LaunchRequest",
    "NotFound",
    "NotOwned",
    "Notice",
    "OwnerTags",
    "Pool",
    "PoolCatalogue",
    "Provider",
    "ProviderError",
    "PurchaseModel",
    "QuotaExceeded",
    "QuotaHeadroom",
    "RateCard",
    "RateCardEntry",
    "ReclaimReceipt",
    "Reservation",
    "Throttled",
    "UserDataReadback",
    "user_data_size_b64",
]

NOTICE_SECONDS = 120
TAG_PREFIX = "sco:"
OWNER_TAG_KEYS = ("workload", "pool", "partition", "generation")
_MAX_TAG = 60  # Nova: a server tag is at most 60 characters, without "/" or ","
USER_DATA_LIMIT_B64 = 65535  # Nova: a server's user_data is at most 65,535 bytes once base64-encoded

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Clock(Protocol):
    """An injected clock: wall time live, virtual time in replay. Always UTC."""

    def now(self) -> datetime:
        """The current time (UTC, timezone-aware)."""


class OwnerTags(BaseModel):
    """The tags that say SCO owns an instance and why it exists (ADR-11): enough to rebuild fleet state."""

    model_config = _FROZEN

    workload: str = Field(min_length=1)
    pool: str = Field(min_length=1)
    partition: str = Field(min_length=1)
    generation: int = Field(ge=0, description="plan generation that launched the instance")

    def to_tags(self) -> tuple[str, ...]:
        """Nova-safe tags ``sco:<key>=<value>`` (``/`` and ``,`` percent-encoded)."""
        tags = []
        for key in OWNER_TAG_KEYS:
            tag = f"{TAG_PREFIX}{key}={quote(str(getattr(self, key)), safe=':.=-_@+')}"
            if len(tag) > _MAX_TAG:
                raise InvalidRequest(f"tags.{key}", getattr(self, key),
                                     f"a tag is at most {_MAX_TAG} characters; shorten the {key}")
            tags.append(tag)
        return tuple(tags)

    @staticmethod
    def parse(tags: tuple[str, ...] | list[str]) -> dict[str, str]:
        """The ``sco:`` tags of an instance as a dict (values decoded)."""
        return dict(_parsed(tuple(tags)))

    @classmethod
    def from_tags(cls, tags: tuple[str, ...] | list[str]) -> OwnerTags | None:
        """The owner tags, or ``None`` when any of them is missing or malformed (then it is not ours).

        Memoised on the tags (an instance keeps its tags for life; the result is immutable): a controller
        parses every listed instance's tags every pass.
        """
        return _owner(tuple(tags)) if cls is OwnerTags else _owner_of(cls, tuple(tags))

    @staticmethod
    def missing(tags: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """The owner tag names (with the ``sco:`` prefix) that ``tags`` lacks."""
        found = OwnerTags.parse(tags)
        return tuple(f"{TAG_PREFIX}{k}" for k in OWNER_TAG_KEYS if k not in found)


@lru_cache(maxsize=65536)
def _parsed(tags: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for tag in tags:
        if tag.startswith(TAG_PREFIX) and "=" in tag:
            key, _, value = tag[len(TAG_PREFIX):].partition("=")
            out[key] = unquote(value)
    return tuple(out.items())


def _owner_of(cls: type[OwnerTags], tags: tuple[str, ...]) -> OwnerTags | None:
    found = dict(_parsed(tags))
    if any(k not in found for k in OWNER_TAG_KEYS):
        return None
    try:
        return cls(workload=found["workload"], pool=found["pool"], partition=found["partition"],
                   generation=int(found["generation"]))
    except (ValueError, InvalidRequest):
        return None


@lru_cache(maxsize=65536)
def _owner(tags: tuple[str, ...]) -> OwnerTags | None:
    return _owner_of(OwnerTags, tags)


class LaunchRequest(BaseModel):
    """Launch ``count`` instances of one pool in one call (Nova multi-create)."""

    model_config = _FROZEN

    pool_id: str
    count: int
    owner: OwnerTags
    metadata: dict[str, str] = Field(default_factory=dict)
    user_data: str | None = Field(default=None, description="cloud-init user-data: the agent's contract subset")
    image: str | None = Field(default=None, description="the image to boot (the agent version, ADR-32); None: "
                                                        "the provider's configured image")
    name_prefix: str = "sco"

    @field_validator("count")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            # Not a ValueError: pydantic lets it through unwrapped, so callers get the typed error.
            raise InvalidRequest("count", value, "ask for at least 1 instance")
        return value

    @property
    def tags(self) -> tuple[str, ...]:
        """The owner tags the launched instances carry."""
        return self.owner.to_tags()


class InstanceStatus(StrEnum):
    """An instance's life as the provider reports it."""

    BUILDING = "building"
    ACTIVE = "active"
    NOTIFIED = "notified"  # a reclaim notice is out; deletion follows at the deadline
    DELETED = "deleted"
    ERROR = "error"


class Instance(BaseModel):
    """One instance as the provider lists it; ``owner`` says whether it is ours."""

    model_config = _FROZEN

    instance_id: str
    name: str
    region: str
    pool_id: str | None
    hall: str | None = None
    status: InstanceStatus
    tags: tuple[str, ...] = ()
    metadata: dict[str, str] = Field(default_factory=dict)
    launched_at: datetime | None = None

    @property
    def owner(self) -> OwnerTags | None:
        """The SCO owner tags, or None when the instance is not ours."""
        return OwnerTags.from_tags(self.tags)


class RateCardEntry(BaseModel):
    """One pool's line on the rate card: its current and guaranteed rates (EUR/h) and free room."""

    model_config = _FROZEN

    pool_id: str
    rate_eur_h: Decimal
    guaranteed_rate_eur_h: Decimal
    utilisation: float = Field(ge=0, le=1, description="share of the aggregate's capacity in use")
    free_instances: int = Field(ge=0)


class RateCard(BaseModel):
    """Published per pool every five minutes; the rate follows utilisation."""

    model_config = _FROZEN

    region: str
    time: datetime
    valid_for: timedelta = timedelta(minutes=5)
    entries: tuple[RateCardEntry, ...]

    def rate(self, pool_id: str) -> RateCardEntry:
        """The entry of ``pool_id``.

        Raises:
            NotFound: the card has no such pool.
        """
        for entry in self.entries:
            if entry.pool_id == pool_id:
                return entry
        raise NotFound("pool", pool_id, tuple(e.pool_id for e in self.entries))


class Reservation(BaseModel):
    """Committed capacity a business unit has bought (Blazar lease), drawn first for floors (ADR-22)."""

    model_config = _FROZEN

    reservation_id: str
    business_unit: str
    pool_id: str
    instances: int = Field(ge=0)
    in_use: int = Field(ge=0)
    start: datetime
    end: datetime

    @property
    def free(self) -> int:
        """Instances of the reservation not yet in use (never negative)."""
        return max(self.instances - self.in_use, 0)


class ForwardCapacity(BaseModel):
    """Expected free reclaimable instances in a pool over a future window."""

    model_config = _FROZEN

    pool_id: str
    start: datetime
    end: datetime
    expected_free_instances: int = Field(ge=0)
    reclaim_probability: float = Field(ge=0, le=1)


class QuotaHeadroom(BaseModel):
    """The project's quota: limits and use (a negative limit means unlimited)."""

    model_config = _FROZEN

    project: str
    instances_limit: int
    instances_used: int
    vcpu_limit: int
    vcpu_used: int
    memory_mib_limit: int
    memory_mib_used: int

    @property
    def instances_free(self) -> int:
        """Instances the quota still allows; a large number when the limit is unlimited."""
        return max(self.instances_limit - self.instances_used, 0) if self.instances_limit >= 0 else 1 << 30


class Notice(BaseModel):
    """The hard notice published on ``notice_subject(region, instance)`` and served by instance metadata."""

    model_config = _FROZEN

    region: str
    instance_id: str
    pool_id: str
    hall: str
    issued_at: datetime
    terminate_at: datetime
    cause: str
    drill: bool = False


class Advisory(BaseModel):
    """Published on ``advisory_subject(region, instance)`` when a reclaim of the pool is forecast."""

    model_config = _FROZEN

    region: str
    instance_id: str
    pool_id: str
    issued_at: datetime
    expected_at: datetime
    probability: float = Field(ge=0, le=1)


class ReclaimReceipt(BaseModel):
    """What a drill's reclaim call did: which instances got notices and when they will be deleted."""

    model_config = _FROZEN

    instances: tuple[str, ...]
    terminate_at: datetime
    drill: bool


@runtime_checkable
class Provider(Protocol):
    """The provider contract. Every mutating call (launch, terminate, reclaim) may raise ``Throttled``."""

    @property
    def region(self) -> str:
        """The region this provider serves."""

    def catalogue(self) -> PoolCatalogue:
        """Pools (SKU family × size × hall × purchase model) with aggregate and hall for correlation."""
        ...

    def rate_card(self) -> RateCard:
        """The current rate card (one entry per pool, refreshed every five minutes)."""

    def reservations(self, business_unit: str | None = None) -> tuple[Reservation, ...]:
        """Committed capacity, of one business unit or of all when ``business_unit`` is None."""

    def forward_capacity(self, horizon: timedelta) -> tuple[ForwardCapacity, ...]:
        """Expected free reclaimable capacity per pool over the next ``horizon``."""

    def quota_headroom(self) -> QuotaHeadroom:
        """The project's quota headroom."""

    def launch(self, request: LaunchRequest) -> tuple[Instance, ...]:
        """All or nothing. Raises NotFound (pool), QuotaExceeded, CapacityUnavailable, Throttled."""
        ...

    def list_instances(self, tags: Mapping[str, str] | None = None) -> tuple[Instance, ...]:
        """Instances in the orchestrator's projects; ``tags`` filters on owner tags, e.g. {"workload": "w1"}."""
        ...

    def terminate(self, instance_id: str) -> None:
        """Raises NotFound, or NotOwned when the instance lacks the owner tags."""
        ...

    def reclaim(self, instance_ids: tuple[str, ...], *, drill: bool = True) -> ReclaimReceipt:
        """The provider's reclaim path, for drills (ADR-33): notices now, deletion after the notice window."""
        ...


def user_data_size_b64(user_data: str) -> int:
    """The size of ``user_data`` once base64-encoded (UTF-8), the figure Nova's limit is on."""
    return (len(user_data.encode()) + 2) // 3 * 4


@runtime_checkable
class UserDataReadback(Protocol):
    """The user-data a launch gave an instance, exactly as sent.

    Nova serves it base64-encoded as ``OS-EXT-SRV-ATTR:user_data`` (microversion >= 2.3, to an administrator);
    the simulated region on ``GET /v1/instances/{id}/user-data``. ``None`` when the launch sent none.

    Raises:
        NotFound: no such instance in the orchestrator's project.
    """

    def user_data(self, instance_id: str) -> str | None:
        """The instance's user-data as its launch sent it, or None."""
