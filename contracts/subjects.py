"""Event kinds and NATS subject names. Standard library only: the agent imports this module."""

from __future__ import annotations

import re
from enum import StrEnum

__all__ = [
    "AGENT_EVENT_KINDS",
    "EVENTS_STREAM",
    "EVENT_SUBJECT_PREFIX",
    "RECLAIM_KINDS",
    "EventKind",
    "advisory_subject",
    "agent_event_subjects",
    "agent_inbox_prefix",
    "agent_nats_name",
    "event_subject",
    "event_subject_problem",
    "is_reclaim",
    "notice_subject",
    "quarantine_subject",
    "user_inbox_prefix",
]


class EventKind(StrEnum):
    """The kinds of lifecycle event; each is published on ``event_subject(region, kind)``."""

    PLACED = "placed"
    LAUNCHED = "launched"
    LAUNCH_FAILED = "launch-failed"
    LAUNCH_DEFERRED = "launch-deferred"  # not tried: its pool refused another launch for capacity this pass
    NOTICE = "notice"
    ADVISORY = "advisory"
    ADVISORY_LAPSED = "advisory-lapsed"
    DRAIN_STARTED = "drain-started"
    DRAIN_LOCAL = "drain-local"
    DRAINED = "drained"
    OVERRUN = "overrun"
    CHECKPOINT_WRITTEN = "checkpoint-written"
    CHECKPOINT_FAILED = "checkpoint-failed"
    LOST = "lost"
    NO_NOTICE_LOSS = "no-notice-loss"
    TERMINATED = "terminated"
    REPLACED = "replaced"
    FLOOR_RESTORED = "floor-restored"
    FALLBACK_STARTED = "fallback-started"
    FALLBACK_RETURNED = "fallback-returned"
    SHORTFALL = "shortfall"
    EXCLUDED = "excluded"
    READMITTED = "readmitted"
    APPROVAL_REQUESTED = "approval-requested"
    APPROVAL_GRANTED = "approval-granted"
    APPROVAL_DENIED = "approval-denied"
    APPROVAL_REFUSED = "approval-refused"      # an answer the arbiter did not accept (stable code APR001..)
    CLAIM_REFUSED = "claim-refused"
    BREAKER_TRIPPED = "breaker-tripped"
    QUARANTINED = "quarantined"
    CREDENTIALS_REVOKED = "credentials-revoked"
    BUNDLE_REFUSED = "bundle-refused"
    CONTRACT_BREACH = "contract-breach"


# What counts as a reclaim (ADR-07): the start of one, announced (``notice``) or not (``no-notice-loss``). The
# ``terminated`` that follows either is the end of the same reclaim and never counts again. Drills never count.
RECLAIM_KINDS = frozenset({EventKind.NOTICE, EventKind.NO_NOTICE_LOSS})


def is_reclaim(kind: EventKind | str, drill: bool) -> bool:
    """True when an event of ``kind`` starts a provider reclaim: a notice or a loss without one, not a drill.

    The one definition the exclusion watcher (waves), the controller's interruption signal and the analytics'
    interruption rate (``orchestration.rankings.RECLAIM_FILTER``) share.
    """
    return not drill and str(kind) in RECLAIM_KINDS


EVENTS_STREAM = "SCO_EVENTS"
EVENT_SUBJECT_PREFIX = "sco.events"
_TOKEN = re.compile(r"[^A-Za-z0-9_-]")


def _token(value: str) -> str:
    """A NATS subject token: no dots, spaces or wildcards."""
    return _TOKEN.sub("_", value) or "_"


# What a node agent publishes (its drain, its notices and advisories as it saw them, the workload's checkpoint
# reports it relays, its own refusals); its NATS credential may publish these kinds, for its own instance only.
AGENT_EVENT_KINDS = frozenset({
    EventKind.NOTICE, EventKind.ADVISORY, EventKind.ADVISORY_LAPSED, EventKind.DRAIN_STARTED,
    EventKind.DRAIN_LOCAL, EventKind.DRAINED, EventKind.OVERRUN, EventKind.CHECKPOINT_WRITTEN,
    EventKind.CHECKPOINT_FAILED, EventKind.CREDENTIALS_REVOKED, EventKind.BUNDLE_REFUSED,
})


def event_subject(region: str, kind: EventKind | str, instance: str | None = None) -> str:
    """``sco.events.<region>.<kind>``, or ``sco.events.<region>.<kind>.<instance>`` about one instance.

    The stream ``SCO_EVENTS`` captures ``sco.events.>``.
    The instance token lets NATS permissions bind a subject to one node: an agent's credential may publish
    only on its own instance's subjects (``agent_event_subjects``), and the ingest refuses an event whose
    body names another instance, region or kind than its subject (``event_subject_problem``).
    """
    base = f"{EVENT_SUBJECT_PREFIX}.{_token(region)}.{_token(str(kind))}"
    return f"{base}.{_token(instance)}" if instance else base


def agent_event_subjects(region: str, instance: str) -> tuple[str, ...]:
    """The event subjects one instance's agent may publish: ``AGENT_EVENT_KINDS`` for its own instance."""
    return tuple(event_subject(region, kind, instance) for kind in sorted(AGENT_EVENT_KINDS))


def event_subject_problem(subject: str, region: object, kind: object, instance: object) -> str | None:
    """Why an event with these fields may not ride ``subject`` (None when it may).

    A publisher's NATS permissions hold the subject; this holds the body to the subject, so a credential that
    may publish only one instance's events cannot speak for another instance, region or kind. A subject
    without an instance token (``sco.events.<region>.<kind>``: only the region, the relay and the controller
    may publish those) binds region and kind only — the form events had before subjects named the instance.
    """
    base = event_subject(str(region), str(kind))  # the ingest asks this of every event: each token made once
    if subject == base:
        return None
    with_instance = f"{base}.{_token(str(instance))}" if instance else base
    if subject == with_instance:
        return None
    return f"subject-mismatch: published on {subject!r}, the body's region/kind/instance belong on {with_instance!r}"


def notice_subject(region: str, instance: str) -> str:
    """Per-instance hard notice (core NATS, per-hall relay): ``sco.notice.<region>.<instance>``."""
    return f"sco.notice.{_token(region)}.{_token(instance)}"


def advisory_subject(region: str, instance: str) -> str:
    """The subject of advisories for one instance: ``sco.advisory.<region>.<instance>``."""
    return f"sco.advisory.{_token(region)}.{_token(instance)}"


def quarantine_subject(region: str, partition: str) -> str:
    """The subject of quarantine orders for one partition: ``sco.quarantine.<region>.<region_cluster>``."""
    return f"sco.quarantine.{_token(region)}.{_token(partition.replace('/', '_'))}"


def user_inbox_prefix(user: str) -> str:
    """The reply-inbox prefix of a component's NATS user, ``_INBOX_<user>``.

    It may subscribe to its own replies (``_INBOX_<user>.>``) and to no one else's (``_INBOX.>`` would let it
    read every reply).
    """
    return f"_INBOX_{_token(user)}"


def agent_inbox_prefix(instance: str) -> str:
    """The reply-inbox prefix of one instance's agent, ``_INBOX_<instance>``.

    Its NATS credential may subscribe to its own replies (``_INBOX_<instance>.>``) and not to anyone else's.
    """
    return f"_INBOX_{_token(instance)}"


def agent_nats_name(region: str, instance: str) -> str:
    """The NATS user of one instance's agent, ``agent.<region>.<instance>`` (subject-token spelling).

    The stack mints it; the agent logs in as it with the password its cloud-config wrote.
    """
    return f"agent.{_token(region)}.{_token(instance)}"
