"""The reconciler's pure diff (ADR-10): desired slots (plan in force + fallback) against the instances the
provider lists with our tags. Launch what is missing, one multi-create per slot; mark the rest surplus.

Level-triggered: nothing here remembers what it asked for before. A launch that reached the provider shows up
in the next listing and is not asked for again, whatever happened to the process in between; the stable
``launch_key`` (partition/workload/pool/purpose/generation/have) names the same intent on a repeated pass.
Notified instances do not count toward the plan, so a replacement is launched while they drain (ADR-09).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from controllers.planning import Purpose as PlanPurpose
from controllers.planning import WorkloadPlan

from .breaker import tier_rank
from .model import Launch, Observed, Purpose, SlotKey, Terminate

__all__ = ["Diff", "desired_slots", "diff", "interleave"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Diff:
    launches: tuple[Launch, ...]
    surplus: tuple[Terminate, ...]     # candidates only: the breaker and the idle rule decide

    @property
    def launch_count(self) -> int:
        return sum(a.count for a in self.launches)


def desired_slots(plans: Mapping[str, WorkloadPlan], extra: Mapping[SlotKey, int] | None = None) -> dict[SlotKey, int]:
    """Instances wanted per slot: the plan's allocations (floor and reclaimable) plus ``extra`` (fallback)."""
    out: dict[SlotKey, int] = defaultdict(int)
    for p in plans.values():
        for a in p.allocations:
            purpose = Purpose.FLOOR if a.purpose is PlanPurpose.FLOOR else Purpose.RECLAIMABLE
            out[SlotKey(p.workload, a.pool_id, purpose)] += a.instances
    for key, n in (extra or {}).items():
        out[key] += n
    return {k: v for k, v in out.items() if v > 0}


def diff(desired: Mapping[SlotKey, int], observed: Sequence[Observed], *, partition: str, generation: int,
         tiers: Mapping[str, str] | None = None, cause: str = "plan") -> Diff:
    """Launches for missing instances; surplus (newest first within a slot) for the rest.

    Only instances of ``partition`` are considered: other partitions have their own leader."""
    tiers = tiers or {}
    live: dict[SlotKey, list[Observed]] = defaultdict(list)
    for o in observed:
        if o.partition == partition and o.live:
            live[o.key].append(o)
    launches: list[Launch] = []
    surplus: list[Terminate] = []
    for key in sorted(set(desired) | set(live)):
        want = desired.get(key, 0)
        have = live.get(key, [])
        tier = tiers.get(key.workload, "")
        if want > len(have):
            launches.append(Launch(
                key=key, count=want - len(have), partition=partition, generation=generation, tier=tier,
                cause=cause,
                launch_key=f"{partition}/{key.workload}/{key.pool}/{key.purpose}/g{generation}/{len(have)}"))
        elif len(have) > want:
            newest_first = sorted(have, key=lambda o: (o.launched_at or _EPOCH, o.instance_id), reverse=True)
            reason = "surplus" if key.workload in tiers else "orphan"
            surplus.extend(Terminate(o, reason, tier) for o in newest_first[: len(have) - want])
    return Diff(tuple(launches), tuple(surplus))


def interleave(launches: Sequence[Launch], held: Mapping[str, int] | None = None) -> list[Launch]:
    """The launches in rounds, fewest held first: a workload's next slot (its floor first) is in round
    ``held + k`` — what it already holds (``held``, live instances per workload) plus its slots before this one
    — so every workload that holds nothing gets its first instance before any other gets a second, this pass
    and the next. Within a round tier 1 goes first, then the order given.

    The token budget (5 calls a second per partition) ends a pass's launches at the first ``Throttled``; in the
    diff's order (by workload name) the last workloads of a partition's first placement waited several passes
    for their first instance (16 s in the demo: ADR-12's ramp bounds a restart, not a first placement)."""
    held = held or {}
    rank: dict[str, int] = defaultdict(int)
    rounds: dict[int, int] = {}
    for n in sorted(range(len(launches)), key=lambda n: (launches[n].key.workload,
                                                         launches[n].key.purpose is not Purpose.FLOOR, n)):
        workload = launches[n].key.workload
        rounds[n] = held.get(workload, 0) + rank[workload]
        rank[workload] += 1
    return [launches[n] for n in sorted(range(len(launches)),
                                        key=lambda n: (rounds[n], tier_rank(launches[n].tier), n))]
