"""Output commit with attempts and quarantine (ADR-21).

A unit writes its results to ``staging/<unit>/<attempt>/`` in the workload's bucket. Only when the unit
completes does :meth:`OutputCommitter.commit` publish them: a server-side copy of every staged object to
``output/<unit>/<name>``, then the completion marker ``output/<unit>/_SUCCESS`` (JSON: attempt and the
object list). Readers go through :meth:`OutputCommitter.published`, which sees a unit's output only once its
marker exists, so a unit interrupted while writing (or while publishing) leaves no partial result visible.

Each unit has an attempt ledger at ``units/<unit>/attempts.json``. An attempt that started and neither
committed nor ended otherwise was ended by a reclaim (the node went away under it); after four attempts
ended by reclaim the unit is quarantined: a ``QUARANTINED`` event on ``quarantine_subject(region,
partition)`` and a notification to the contract's owner, and :meth:`OutputCommitter.begin` refuses it until
:meth:`release` is called.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.event_record import encode_event, make_event_record
from contracts.subjects import EventKind, quarantine_subject
from workload.checkpoint.errors import NotFound
from workload.checkpoint.store import Encryption, ObjectStore
from workload.errors import Quarantined

from .notify import EventPublisher, OwnerNotifier

__all__ = ["MARKER", "Attempt", "OutputCommitter", "Published", "Quarantined", "UnitOwner"]

MARKER = "_SUCCESS"
RECLAIM = "reclaim"


@dataclass(frozen=True)
class UnitOwner:
    """Whose units these are: workload, contract version, owner and region."""

    workload: str
    contract_version: str
    owner: str
    region: str
    partition: str


@dataclass(frozen=True)
class Attempt:
    """One attempt of a unit of work."""

    unit: str
    number: int


@dataclass(frozen=True)
class Published:
    """A unit's published output: the attempt that produced it and its names."""

    unit: str
    attempt: int
    names: tuple[str, ...]


def _valid_token(kind: str, value: str) -> str:
    if not value or "/" in value or value in (".", "..") or value == MARKER:
        raise ValueError(f"{kind} {value!r} must be a non-empty name without '/' (and not {MARKER})")
    return value


class OutputCommitter:
    """Stages a unit's outputs per attempt and publishes one attempt's, quarantining a unit reclaims keep ending."""

    def __init__(self, store: ObjectStore, bucket: str, encryption: Encryption, who: UnitOwner, *,
                 publisher: EventPublisher, notifier: OwnerNotifier, clock: Callable[[], datetime],
                 max_reclaim_attempts: int = 4, staging: str = "staging", output: str = "output",
                 ledger: str = "units") -> None:
        self.store, self.bucket, self.enc, self.who = store, bucket, encryption, who
        self.publisher, self.notifier, self.clock = publisher, notifier, clock
        self.max_reclaim_attempts = max_reclaim_attempts
        self.staging, self.output, self.ledger_prefix = staging, output, ledger

    # --- keys ------------------------------------------------------------------------------------------
    def staging_prefix(self, attempt: Attempt) -> str:
        """The key prefix an attempt stages its outputs under."""
        return f"{self.staging}/{attempt.unit}/{attempt.number:04d}/"

    def output_prefix(self, unit: str) -> str:
        """The key prefix a unit's published outputs live under."""
        return f"{self.output}/{unit}/"

    def _ledger_key(self, unit: str) -> str:
        return f"{self.ledger_prefix}/{unit}/attempts.json"

    def _load(self, unit: str) -> dict[str, Any]:
        try:
            loaded: dict[str, Any] = json.loads(self.store.get(self.bucket, self._ledger_key(unit), self.enc))
            return loaded
        except NotFound:
            return {"unit": unit, "attempts": [], "quarantined": False}

    def _save(self, ledger: dict[str, Any]) -> None:
        self.store.put(self.bucket, self._ledger_key(ledger["unit"]), json.dumps(ledger, sort_keys=True).encode(),
                       self.enc)

    def install_lifecycle(self, max_age_days: int = 7) -> None:
        """Staging left by interrupted attempts expires; aborted uploads are cleaned (published output stays)."""
        rule = {"ID": "sco-outputcommit-staging", "Status": "Enabled", "Filter": {"Prefix": f"{self.staging}/"},
                "Expiration": {"Days": max_age_days}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}
        try:
            existing = self.store.get_lifecycle(self.bucket)
        except NotFound:
            existing = []
        self.store.put_lifecycle(self.bucket, [r for r in existing if r.get("ID") != rule["ID"]] + [rule])

    # --- attempts --------------------------------------------------------------------------------------
    def reclaim_ended(self, unit: str) -> int:
        """How many of the unit's attempts a reclaim ended."""
        return sum(1 for a in self._load(unit)["attempts"] if a.get("outcome") == RECLAIM)

    def begin(self, unit: str) -> Attempt:
        """Start the next attempt. A previous attempt still marked running was ended by a reclaim."""
        _valid_token("unit", unit)
        ledger = self._load(unit)
        now = self.clock().isoformat()
        for a in ledger["attempts"]:
            if a.get("outcome") == "running":
                a.update(outcome=RECLAIM, ended_at=now)
        if self._maybe_quarantine(ledger) or ledger.get("quarantined"):
            self._save(ledger)
            raise Quarantined(f"unit {unit} of {self.who.workload} is quarantined after "
                              f"{self.max_reclaim_attempts} attempts ended by reclaim; its owner "
                              f"{self.who.owner} was notified; `release` it after a fix")
        number = len(ledger["attempts"]) + 1
        ledger["attempts"].append({"attempt": number, "started_at": now, "outcome": "running"})
        self._save(ledger)
        return Attempt(unit, number)

    def end_by_reclaim(self, attempt: Attempt) -> bool:
        """Record that the notice ended this attempt; True when that quarantined the unit."""
        ledger = self._load(attempt.unit)
        for a in ledger["attempts"]:
            if a["attempt"] == attempt.number and a.get("outcome") == "running":
                a.update(outcome=RECLAIM, ended_at=self.clock().isoformat())
        quarantined = self._maybe_quarantine(ledger)
        self._save(ledger)
        return quarantined

    def release(self, unit: str) -> None:
        """The owner fixed the unit: clear the quarantine and the reclaim count."""
        ledger = self._load(unit)
        ledger["quarantined"] = False
        for a in ledger["attempts"]:
            if a.get("outcome") == RECLAIM:
                a["outcome"] = "reclaim-released"
        self._save(ledger)

    def _maybe_quarantine(self, ledger: dict[str, Any]) -> bool:
        count = sum(1 for a in ledger["attempts"] if a.get("outcome") == RECLAIM)
        if ledger.get("quarantined") or count < self.max_reclaim_attempts:
            return False
        ledger["quarantined"] = True
        w = self.who
        event = make_event_record(
            EventKind.QUARANTINED, now=self.clock(), region=w.region, partition=w.partition, workload=w.workload,
            contract_version=w.contract_version, cause=f"{count} attempts ended by reclaim", source="outputcommit",
            attributes={"unit": ledger["unit"], "attempts": len(ledger["attempts"]), "reclaim_ended": count,
                        "owner": w.owner})
        self.publisher.publish(quarantine_subject(w.region, w.partition), encode_event(event), event["event_id"])
        self.notifier.notify(
            w.owner, f"[sco] unit {ledger['unit']} of {w.workload} quarantined",
            f"Unit {ledger['unit']} of workload {w.workload} (contract {w.workload}@{w.contract_version}, "
            f"partition {w.partition}) was interrupted by a reclaim in {count} attempts in a row and will not "
            f"be run again on reclaimable capacity (ADR-21).\nShorten the unit (max_unit_length_min), add a "
            f"checkpoint, or move it to a lower tier; then release it.\nEvent {event['event_id']}.")
        return True

    # --- staging and publish ---------------------------------------------------------------------------
    def stage(self, attempt: Attempt, name: str, data: bytes) -> str:
        """Stage one output of an attempt; the key it was written to."""
        key = self.staging_prefix(attempt) + _valid_token("output name", name)
        self.store.put(self.bucket, key, data, self.enc)
        return key

    def commit(self, attempt: Attempt) -> Published:
        """Publish the attempt's staged objects, then write the completion marker.

        Copy each to its final key, remove final objects this attempt did not produce, then the marker. Idempotent: a
        commit interrupted before the marker is simply run again.
        """
        ledger = self._load(attempt.unit)
        mine = next((a for a in ledger["attempts"] if a["attempt"] == attempt.number), None)
        if mine is None or mine.get("outcome") not in ("running", "committing"):
            raise ValueError(f"attempt {attempt.number} of unit {attempt.unit} is not running "
                             f"(outcome {None if mine is None else mine.get('outcome')}); begin a new attempt")
        staged = self.store.list_objects(self.bucket, self.staging_prefix(attempt))
        names = tuple(sorted(i.key[len(self.staging_prefix(attempt)):] for i in staged))
        out = self.output_prefix(attempt.unit)
        self.store.delete(self.bucket, [out + MARKER])  # a republish hides the old output until it is whole
        for name in names:
            self.store.copy(self.bucket, self.staging_prefix(attempt) + name, out + name, self.enc)
        stale = [i.key for i in self.store.list_objects(self.bucket, out)
                 if i.key[len(out):] not in names and i.key != out + MARKER]
        if stale:
            self.store.delete(self.bucket, stale)
        marker = {"unit": attempt.unit, "attempt": attempt.number, "names": list(names),
                  "committed_at": self.clock().isoformat(), "workload": self.who.workload}
        self.store.put(self.bucket, out + MARKER, json.dumps(marker, sort_keys=True).encode(), self.enc)
        mine.update(outcome="completed", ended_at=self.clock().isoformat())
        self._save(ledger)
        self.store.delete(self.bucket, [i.key for i in staged])
        return Published(attempt.unit, attempt.number, names)

    def published(self, unit: str) -> Published | None:
        """The unit's output, or None while it has none that is complete."""
        try:
            marker = json.loads(self.store.get(self.bucket, self.output_prefix(unit) + MARKER, self.enc))
        except NotFound:
            return None
        return Published(unit, int(marker["attempt"]), tuple(marker["names"]))

    def read(self, unit: str, name: str) -> bytes:
        """A published output of the unit; raises ``NotFound`` before its completion marker."""
        pub = self.published(unit)
        if pub is None or name not in pub.names:
            raise NotFound(f"unit {unit} has no published output {name!r} (no completion marker yet)")
        return self.store.get(self.bucket, self.output_prefix(unit) + name, self.enc)
