"""The interruption contract, schema version ``sco/v1`` (ADR-01).

A contract file names a tier and may override only the fields that tier allows (ADR-02, see ``tiers``).
``ContractSpec`` is what a file may say (every field optional except identity); ``Contract`` is the
resolved, complete contract after tier defaults are applied. Both are frozen and forbid unknown fields.
Units are in the field names: seconds ``_s``, minutes ``_min``, percent ``_pct``, gibibytes ``_gib``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .findings import clip

__all__ = [
    "API_VERSION",
    "CheckpointMode",
    "CheckpointSpec",
    "Contract",
    "ContractSpec",
    "Eligibility",
    "FallbackPolicy",
    "FallbackSpec",
    "Framework",
    "PlacementStrategy",
    "Resources",
    "RestartSemantics",
    "Scheduler",
    "TierName",
]

API_VERSION = "sco/v1"

# Matched with ``fullmatch``: ``$`` would also match before a trailing newline ("ci-runners\n").
_WORKLOAD_RE = re.compile(r"[a-z][a-z0-9-]{1,62}")
_PARTITION_RE = re.compile(r"[a-z][a-z0-9-]*/[a-z][a-z0-9-]*")
_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DEADLINE_RE = re.compile(r"daily@([01]\d|2[0-3]):[0-5]\dZ|within:\d{1,4}h")
_SIGNALS = ("SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2", "SIGHUP", "SIGQUIT")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)


class Scheduler(StrEnum):
    """The scheduler that runs the workload."""

    KUBERNETES = "kubernetes"
    SLURM = "slurm"


class TierName(StrEnum):
    """The service tier (T1..T5, or bespoke for a contract reviewed by hand)."""

    T1 = "T1"
    T2 = "T2"
    T3 = "T3"
    T4 = "T4"
    T5 = "T5"
    BESPOKE = "bespoke"


class CheckpointMode(StrEnum):
    """How the workload checkpoints: not at all, periodically, also on notice, or through its framework."""

    NONE = "none"
    PERIODIC = "periodic"
    FINAL_ON_NOTICE_AND_PERIODIC = "final-on-notice+periodic"
    FRAMEWORK = "framework"


class Framework(StrEnum):
    """The framework that checkpoints or requeues the work when the mode is ``framework``."""

    SPARK = "spark"
    PYTORCH = "pytorch"
    SLURM_REQUEUE = "slurm-requeue"


class RestartSemantics(StrEnum):
    """What happens when a unit runs again: idempotent, output-commit (staged then published), or not restartable."""

    IDEMPOTENT = "idempotent"
    OUTPUT_COMMIT = "output-commit"
    NOT_RESTARTABLE = "not-restartable"


class FallbackPolicy(StrEnum):
    """When the controller may fall back to guaranteed capacity, always within the 24 h spend cap."""

    NONE = "none"
    AUTOMATIC_WITHIN_CAP = "automatic-within-cap"
    ON_BREACH_WITHIN_CAP = "on-breach-within-cap"


class PlacementStrategy(StrEnum):
    """How the planner orders pools: deepest forecast capacity first, or cheapest first."""

    DEPTH_FIRST = "depth-first"
    PRICE_FIRST = "price-first"


class CheckpointSpec(_Frozen):
    """The ``checkpoint`` block of a contract file (interval in minutes, final size in GiB)."""

    mode: CheckpointMode | None = None
    framework: Framework | None = None
    interval_min: Annotated[int, Field(ge=1, le=24 * 60)] | None = None
    final_size_gib: Annotated[Decimal, Field(ge=0, le=10_000)] | None = None


class FallbackSpec(_Frozen):
    """The ``fallback`` block of a contract file (spend cap in EUR per 24 h, approver's e-mail)."""

    policy: FallbackPolicy | None = None
    spend_cap_24h_eur: Annotated[Decimal, Field(ge=0, le=10_000_000)] | None = None
    approver: str | None = None

    @field_validator("approver")
    @classmethod
    def _approver_is_email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL_RE.fullmatch(value):
            raise ValueError(f"approver must be an e-mail address of a named person, got {clip(value)!r}")
        return value


class Resources(_Frozen):
    """One unit's resources: vCPUs, memory in GiB and GPUs."""

    vcpu: Annotated[int, Field(ge=1, le=512)]
    memory_gib: Annotated[int, Field(ge=1, le=8192)]
    gpu: Annotated[int, Field(ge=0, le=16)] = 0


class Eligibility(_Frozen):
    """Restrictions on pools (SKU families, sizes, halls); empty means any."""

    sku_families: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    halls: tuple[str, ...] = ()


class ContractSpec(_Frozen):
    """What a contract file may contain. Tier-governed fields are optional; the tier supplies defaults."""

    api_version: Literal["sco/v1"] = Field(alias="apiVersion", default="sco/v1")
    workload: str
    version: Annotated[int, Field(ge=1)]
    owner: str
    business_unit: str
    scheduler: Scheduler
    partition: str
    tier: TierName
    nearest_tier: TierName | None = None
    review: str | None = None
    description: str | None = None

    drain_budget_s: Annotated[int, Field(ge=1, le=3600)] | None = None
    drain_signal: str | None = None
    advisory_drain: bool | None = None
    checkpoint: CheckpointSpec = CheckpointSpec()
    restart: RestartSemantics | None = None
    max_interruption_rate_pct_h: Annotated[Decimal, Field(ge=0, le=100)] | None = None
    floor_pct: Annotated[int, Field(ge=0, le=100)] | None = None
    deadline: str | None = None
    fallback: FallbackSpec = FallbackSpec()
    max_unit_length_min: Annotated[int, Field(ge=1, le=7 * 24 * 60)] | None = None
    resources: Resources
    eligible: Eligibility = Eligibility()

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("workload")
    @classmethod
    def _workload_id(cls, value: str) -> str:
        if not _WORKLOAD_RE.fullmatch(value):
            raise ValueError(
                f"workload must be 2-63 lowercase letters, digits or '-', starting with a letter; got {clip(value)!r}"
            )
        return value

    @field_validator("owner")
    @classmethod
    def _owner_is_email(cls, value: str) -> str:
        if not _EMAIL_RE.fullmatch(value):
            raise ValueError(f"owner must be an e-mail address, got {clip(value)!r}")
        return value

    @field_validator("partition")
    @classmethod
    def _partition_form(cls, value: str) -> str:
        if not _PARTITION_RE.fullmatch(value):
            raise ValueError(f"partition must be '<region>/<scheduler-cluster>' in lowercase, got {clip(value)!r}")
        return value

    @field_validator("drain_signal")
    @classmethod
    def _known_signal(cls, value: str | None) -> str | None:
        if value is not None and value not in _SIGNALS:
            raise ValueError(f"drain_signal must be one of {', '.join(_SIGNALS)}; got {clip(value)!r}")
        return value

    @field_validator("deadline")
    @classmethod
    def _deadline_form(cls, value: str | None) -> str | None:
        if value is not None and not _DEADLINE_RE.fullmatch(value):
            raise ValueError(
                f"deadline must be 'daily@HH:MMZ' (a UTC time each day) or 'within:<hours>h'; got {clip(value)!r}"
            )
        return value

    @model_validator(mode="after")
    def _bespoke_names_nearest(self) -> ContractSpec:
        if self.tier is TierName.BESPOKE and self.nearest_tier in (None, TierName.BESPOKE):
            raise ValueError("a bespoke contract must name its nearest_tier (T1..T5)")
        if self.tier is not TierName.BESPOKE and self.nearest_tier is not None:
            raise ValueError("nearest_tier is only for tier: bespoke")
        return self

    @property
    def ref(self) -> str:
        """``<workload>@<version>``."""
        return f"{self.workload}@{self.version}"


class Contract(_Frozen):
    """A fully resolved contract: every field has a value. Produced by ``tiers.resolve``."""

    workload: str
    version: int
    owner: str
    business_unit: str
    scheduler: Scheduler
    partition: str
    tier: TierName
    base_tier: TierName
    needs_review: bool
    description: str | None
    drain_budget_s: int
    drain_signal: str
    advisory_drain: bool
    checkpoint_mode: CheckpointMode
    framework: Framework | None
    checkpoint_interval_min: int | None
    final_checkpoint_gib: Decimal
    restart: RestartSemantics
    max_interruption_rate_pct_h: Decimal
    floor_pct: int
    deadline: str | None
    fallback_policy: FallbackPolicy
    spend_cap_24h_eur: Decimal
    approver: str | None
    max_unit_length_min: int | None
    placement_strategy: PlacementStrategy
    resources: Resources
    eligible: Eligibility

    @property
    def ref(self) -> str:
        """``<workload>@<version>``."""
        return f"{self.workload}@{self.version}"

    @property
    def region(self) -> str:
        """The region part of the partition (``<region>/<cluster>``)."""
        return self.partition.split("/", 1)[0]
