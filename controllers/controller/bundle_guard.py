"""The controller's bundle chain: after the signature, the generation and the partition.

``sco controller run`` verifies the controller bundle's signature (``contracts.bundle_verify``), then asks the
partition's ``BundleGuard`` whether it may follow the last bundle this controller verified. The guard keeps that
bundle's header (kind, partition, generation, source digest) in PostgreSQL (``controller_bundles``), so the
chain survives a restart, and refuses with the stable codes of ``contracts.bundle_verify``:

* ``BND003`` — another partition's (or another kind of) bundle;
* ``BND002`` — an older generation than the last verified one (a rollback), or the same generation with other
  content (a fork).

Each refusal is counted (``controller_bundles.refused``) and reported as a ``bundle-refused`` event whose
attributes give the code, the offered and the held generation and the count; the controller then does not start
with that bundle. The pure check is ``judge``; ``BundleGuard.admit`` reads and writes the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.bundle_verify import BundleError, check_succession
from contracts.events import Event

__all__ = ["BundleGuard", "Refusal", "judge", "refusal_event"]

_HEADER = ("kind", "partition", "generation", "source_digest")


@dataclass(frozen=True)
class Refusal:
    """A verified bundle the partition's controller will not take: the code, the message and the count so far."""

    code: str
    message: str
    offered: int
    held: int | None
    count: int


def _header(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: payload.get(k) for k in _HEADER}


def judge(partition: str, held: dict[str, Any] | None, offered: dict[str, Any], where: str) -> BundleError | None:
    """None when ``offered`` (a verified payload) may follow ``held`` for ``partition``, else the refusal."""
    if offered.get("partition") != partition or offered.get("kind") != "ControllerBundle":
        return BundleError(f"{where} is a {offered.get('kind')!r} bundle for partition {offered.get('partition')!r}; "
                           f"the controller of {partition!r} takes only its own ControllerBundle: check --bundle",
                           code="BND003")
    if held is None:
        return None
    try:
        check_succession(held, offered, where)
    except BundleError as exc:
        return exc
    return None


class BundleGuard:
    """The last verified bundle of one partition's controller and its refusal count, in PostgreSQL
    (``controller_bundles``): the chain survives a restart and lives with the rest of the controller's state."""

    def __init__(self, conn: Any, partition: str) -> None:
        """``conn``: a migrated PostgreSQL connection (autocommit)."""
        self.conn, self.partition = conn, partition

    def _read(self) -> tuple[dict[str, Any] | None, int]:
        row = self.conn.execute("SELECT kind, partition, generation, source_digest, refused FROM controller_bundles "
                                "WHERE partition = %s FOR UPDATE", (self.partition,)).fetchone()
        if row is None:
            return None, 0
        held = None if row[2] is None else dict(zip(_HEADER, (row[0], row[1], row[2], row[3]), strict=True))
        return held, int(row[4])

    @property
    def refused(self) -> int:
        """How many verified bundles this partition's controller has refused so far."""
        with self.conn.transaction():
            return self._read()[1]

    def admit(self, payload: dict[str, Any], where: str) -> Refusal | None:
        """Take ``payload`` (already signature-verified) as the partition's bundle, or refuse and count it."""
        with self.conn.transaction():
            held, refused = self._read()
            error = judge(self.partition, held, payload, where)
            if error is None:
                h = _header(payload)
                self.conn.execute(
                    "INSERT INTO controller_bundles (partition, kind, generation, source_digest) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (partition) DO UPDATE SET kind = excluded.kind, "
                    "generation = excluded.generation, source_digest = excluded.source_digest, updated_at = now()",
                    (self.partition, h["kind"], int(h["generation"] or 0), h["source_digest"]))
                return None
            self.conn.execute(
                "INSERT INTO controller_bundles (partition, refused) VALUES (%s, 1) ON CONFLICT (partition) "
                "DO UPDATE SET refused = controller_bundles.refused + 1, updated_at = now()", (self.partition,))
        return Refusal(error.code, error.message, int(payload.get("generation", 0)),
                       None if held is None else int(held.get("generation", 0)), refused + 1)


def refusal_event(refusal: Refusal, *, region: str, partition: str, now: datetime) -> Event:
    """The ``bundle-refused`` event of a refusal (through the outbox, like every controller decision)."""
    return Event(kind="bundle-refused", time=now, region=region, partition=partition, cause=refusal.message[:500],
                 source="controller", attributes={"code": refusal.code, "offered_generation": refusal.offered,
                                                  "held_generation": refusal.held, "refused_total": refusal.count})
