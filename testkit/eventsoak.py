"""The event fault soak: publishers → NATS JetStream → ``sco ingest`` → the ClickHouse front end,
with the ingest, nats-server and the front end each SIGKILLed at seeded random points and restarted, and
poison events mixed in; then a reconciliation of every published id against ClickHouse and the dead letters.

Used by ``tests/stores/test_event_soak.py`` (small) and ``bench/event_soak.py`` (1,000,000 events). The plan
(where the poisons and the kills fall, how long each server stays down) is a pure function of the seed
(:func:`plan_soak`); the run (``testkit.soakrun.run_soak``) is real processes on free ports.

What is checked, after the consumer has nothing pending and nothing unacknowledged:
- every valid event exactly once: ``count()`` with ``FINAL`` = distinct ids = published valid, and the ids
  are exactly the published ones (lost ones are listed as index ranges);
- every poison that reached the stream in ``events_dead_letter`` with the reason of its kind, no valid event
  there; an oversize poison is refused by the client before it reaches the stream (``MaxPayloadError``) and
  counted as such;
- nothing acknowledged that is not stored follows: all acknowledged, so a missing id is an acked loss.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field

from contracts.subjects import event_subject
from stores import clickhouse

__all__ = ["KillPlan", "KillRecord", "SoakPlan", "SoakResult", "event_id", "payload", "plan_soak", "poison",
           "reconcile"]

ID_HIGH = 0x50AC  # high 64 bits of every valid event id: uuid.UUID(int=(ID_HIGH << 64) + index)
TARGETS = ("ingest", "nats", "frontend")
POISON_KINDS = ("invalid-json", "invalid-event", "near-max-payload", "too-old", "too-far-ahead", "oversize")
REASONS = {"invalid-json": "not a valid event", "invalid-event": "not a valid event",
           "near-max-payload": "not a valid event", "too-old": "time outside the sane window",
           "too-far-ahead": "time outside the sane window"}
# index of a valid event from its id (the low 64 bits, the last 17 characters without the dash)
INDEX_SQL = "reinterpretAsUInt64(reverse(unhex(replaceAll(substring(event_id, 20), '-', ''))))"


@dataclass(frozen=True)
class KillPlan:
    """One fault: SIGKILL ``target`` once ClickHouse holds ``at`` rows; restart it after ``down_s``.

    ``hold_from``: the publisher sends no event from that index on until this fault has struck, so the fault
    lands mid-publish however far the publisher runs ahead of the ingest (None: it does not wait).
    """

    at: int
    target: str
    down_s: float
    hold_from: int | None = None


@dataclass(frozen=True)
class SoakPlan:
    """Where the poisons go (after which valid event, which kind) and the kills, all from the seed."""

    events: int
    poisons: tuple[tuple[int, str], ...]
    kills: tuple[KillPlan, ...]


def plan_soak(events: int, kills: int, seed: int, *, poison_every: int = 5000,
              targets: tuple[str, ...] = TARGETS) -> SoakPlan:
    """The seeded plan: one poison per ``poison_every`` events (kinds in turn, at least one of each), and
    ``kills`` faults at distinct random points between 5 % and 85 % of the events, targets in turn from a
    seeded start, each down 0–1.5 s."""
    rng = random.Random(seed)
    count = max(len(POISON_KINDS), events // poison_every)
    poisons = tuple(sorted((rng.randrange(events), POISON_KINDS[i % len(POISON_KINDS)]) for i in range(count)))
    low, high = events // 20, max(events // 20 + kills + 1, events * 85 // 100)
    points = sorted(rng.sample(range(low, high), kills)) if kills else []
    first = rng.randrange(len(targets))
    plan = tuple(KillPlan(at, targets[(first + k) % len(targets)], round(rng.uniform(0.0, 1.5), 2))
                 for k, at in enumerate(points))
    return SoakPlan(events, poisons, plan)


def event_id(index: int) -> str:
    """The id of valid event ``index``."""
    return str(uuid.UUID(int=(ID_HIGH << 64) + index))


def payload(index: int) -> tuple[str, bytes, str]:
    """Valid event ``index``: (subject, JSON, Nats-Msg-Id)."""
    region = f"r{index % 3}"
    body = {"event_id": event_id(index), "kind": "drained", "time": f"2026-11-{1 + index % 28:02d}T00:00:"
            f"{index % 60:02d}.{index % 1000:03d}Z", "region": region, "partition": f"p{index % 8}",
            "pool": f"pool-{index % 140}", "instance": f"i-{index}", "workload": f"w{index % 220}",
            "contract_version": "v1", "cause": "notice", "drill": index % 50 == 0, "source": "soak",
            "attributes": {"seq": index}}
    return event_subject(region, "drained"), json.dumps(body).encode(), body["event_id"]  # type: ignore[return-value]


def poison(number: int, kind: str, max_payload: int) -> tuple[str, bytes, str]:
    """Poison ``number`` of ``kind``: (subject, payload, Nats-Msg-Id ``poison-<number>``)."""
    msg_id = f"poison-{number}"
    subject = event_subject("r1", "drained")
    if kind == "invalid-json":
        return subject, b"{not json " + msg_id.encode(), msg_id
    if kind == "invalid-event":
        return subject, json.dumps({"event_id": msg_id, "kind": "no-such-kind"}).encode(), msg_id
    if kind == "near-max-payload":
        pad = "x" * (max_payload - 300)
        return subject, json.dumps({"kind": "no-such-kind", "id": msg_id, "pad": pad}).encode(), msg_id
    if kind == "oversize":
        return subject, b"x" * (max_payload + 1), msg_id
    good = json.loads(payload(10**12 + number)[1])
    good["event_id"] = str(uuid.UUID(int=(0xBAD << 64) + number))
    good["time"] = "1971-01-01T00:00:00Z" if kind == "too-old" else "9999-01-01T00:00:00Z"
    return subject, json.dumps(good).encode(), msg_id


@dataclass
class KillRecord:
    """What one fault did: when, with how much stored, and how long until the count grew again."""

    target: str
    at: int
    stored_before: int
    killed_at: float
    recovered_s: float | None = None


@dataclass
class SoakResult:
    """The run's figures and the reconciliation."""

    valid: int
    elapsed_s: float
    publish_s: float
    poisons_streamed: int
    poisons_refused: int
    final_count: int = 0
    distinct: int = 0
    raw_rows: int = 0
    missing: list[tuple[int, int]] = field(default_factory=list)  # index ranges [first, last]
    foreign: int = 0  # rows whose id is no published valid event
    dead_letter_ok: int = 0
    dead_letter_problems: list[str] = field(default_factory=list)
    kills: list[KillRecord] = field(default_factory=list)
    ingest_restarts: int = 0  # exits the supervisor restarted (not our kills)
    longest_stall_s: float = 0.0
    drained: bool = False
    leaders_killed: list[str] = field(default_factory=list)  # NATS cluster: the SCO_EVENTS leader at each kill
    replicas_current: bool | None = None  # NATS cluster: every replica current again at the end (None: 1 server)

    @property
    def events_per_s(self) -> float:
        """Valid events from the first publish until all were stored and acknowledged."""
        return self.valid / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def lost(self) -> int:
        """Valid events published and acknowledged by the stream, not in ClickHouse."""
        return sum(last - first + 1 for first, last in self.missing)

    @property
    def duplicated(self) -> int:
        """Copies of one event left after ``FINAL`` (0 when the ReplacingMergeTree collapses them all)."""
        return self.final_count - self.distinct

    @property
    def ok(self) -> bool:
        """0 lost, 0 duplicated, nothing foreign, every poison accounted for, drained."""
        return (self.drained and self.lost == 0 and self.duplicated == 0 and self.foreign == 0
                and self.distinct == self.valid and not self.dead_letter_problems)

    def lines(self) -> list[str]:
        """A human summary."""
        out = [f"valid events {self.valid:,}: {self.events_per_s:,.0f} events/s end to end "
               f"({self.elapsed_s:.1f} s; publishing {self.publish_s:.1f} s)",
               f"ClickHouse: FINAL {self.final_count:,}, distinct {self.distinct:,}, raw rows {self.raw_rows:,} "
               f"({self.raw_rows - self.distinct:,} redelivered copies); lost {self.lost:,}, duplicated "
               f"{self.duplicated:,}, foreign {self.foreign:,}" + (f"; missing ranges {self.missing[:10]}"
                                                                   if self.missing else ""),
               f"poisons: {self.poisons_streamed} in the stream, {self.dead_letter_ok} dead-lettered with their "
               f"reason; {self.poisons_refused} oversize refused by the client (MaxPayloadError)"]
        out += [f"  dead-letter problem: {p}" for p in self.dead_letter_problems[:10]]
        for kill in self.kills:
            rec = "not seen" if kill.recovered_s is None else f"{kill.recovered_s:.1f} s"
            out.append(f"kill {kill.target} at {kill.at:,} published ({kill.stored_before:,} rows stored): "
                       f"stored again after {rec}")
        out.append(f"longest stall with a backlog: {self.longest_stall_s:.1f} s; ingest exits restarted by the "
                   f"supervisor: {self.ingest_restarts}; drained: {self.drained}")
        if self.replicas_current is not None:
            out.append(f"NATS cluster: stream leaders killed {self.leaders_killed}; every replica current again "
                       f"at the end: {self.replicas_current}")
        return out


def recoveries(kills: list[KillRecord], samples: list[tuple[float, int, int]], valid: int,
               drained_at: float | None) -> None:
    """Each kill's recovery: the first sample after it with more rows (or all); else, when the consumer was
    drained (a kill just before the end, the rest stored between two samples), the time it was found drained."""
    for kill in kills:
        for at, count, _ in samples:
            if at > kill.killed_at and (count > kill.stored_before or count >= valid):
                kill.recovered_s = at - kill.killed_at
                break
        else:
            if drained_at is not None:
                kill.recovered_s = drained_at - kill.killed_at


def longest_stall(samples: list[tuple[float, int, int]]) -> float:
    """The longest time the stored row count stood still while fewer rows than published were stored, the
    servers all up (counted from the first stored row and from each restart: a fault's own downtime is not
    a wedge, the time the ingest takes to notice the server is back is)."""
    longest, since, last = 0.0, None, -1
    for at, count, published in samples:
        if count == 0 or published < 0:
            since, last = None, -1
            continue
        if count != last or count >= published:
            since, last = at, count
            continue
        if since is not None:
            longest = max(longest, at - since)
    return longest


def ranges(indexes: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for i in indexes:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def reconcile(ch_url: str, plan: SoakPlan, result: SoakResult, max_payload: int) -> None:
    """Fill ``result`` with what ClickHouse holds against what was published."""
    client = clickhouse.client(ch_url)
    try:
        prefix = event_id(0)[:19]
        result.final_count = int(client.command("SELECT count() FROM events FINAL"))
        result.distinct = int(client.command("SELECT uniqExact(event_id) FROM events"))
        result.raw_rows = int(client.command("SELECT count() FROM events"))
        result.foreign = int(client.command(
            f"SELECT count() FROM (SELECT DISTINCT event_id FROM events) WHERE NOT startsWith(event_id, '{prefix}') "
            f"OR {INDEX_SQL} >= {plan.events}"))
        if result.distinct != plan.events or result.foreign:
            stored = client.query(f"SELECT DISTINCT {INDEX_SQL} AS i FROM events WHERE startsWith(event_id, "
                                  f"'{prefix}') ORDER BY i").result_columns
            have = set(stored[0]) if stored else set()
            result.missing = ranges([i for i in range(plan.events) if i not in have])
        letters = dict(client.query("SELECT msg_id, any(reason) FROM events_dead_letter GROUP BY msg_id").result_rows)
    finally:
        client.close()
    for number, (_, kind) in enumerate(plan.poisons):
        msg_id, reason = f"poison-{number}", letters.pop(f"poison-{number}", None)
        if kind == "oversize":
            if reason is not None:
                result.dead_letter_problems.append(f"{msg_id} (oversize) reached the dead letters")
            continue
        if reason is None:
            result.dead_letter_problems.append(f"{msg_id} ({kind}) is not in events_dead_letter")
        elif not reason.startswith(REASONS[kind]):
            result.dead_letter_problems.append(f"{msg_id} ({kind}) dead-lettered as {reason[:80]!r}")
        else:
            result.dead_letter_ok += 1
    result.dead_letter_problems += [f"{m} dead-lettered but not a poison: {r[:80]!r}" for m, r in letters.items()]
