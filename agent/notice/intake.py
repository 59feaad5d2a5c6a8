"""Notice intake: raw messages from NATS and the metadata endpoint become plausible notices, or refusals.

Both channels go through the same checks (agent/notice/check.py): the raw bound before parsing, then the
plausibility of the parsed notice. A refusal is counted (``sco_agent_notices_refused_total{channel,reason}``)
and its reason logged at most once a minute; it is never acted on. The intake also counts what
``agent.notice.coalesce`` decides for a notice that starts no drain and holds the flood bound: the agent records an
event for the first ``MAX_RECORDED_NOTICES`` distinct notices that change nothing, then only counts them
(``sco_agent_notices_coalesced_total``); a copy of a notice already seen is only counted
(``sco_agent_notices_duplicate_total``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..metrics import Metrics
from ..model import AgentError, NodeIdentity
from .check import MAX_METADATA_BYTES, FloodBound, Refusal, RefusalLog, check_notice, check_raw
from .coalesce import Coalesced, Verdict
from .messages import Notice, parse_metadata, parse_notice

__all__ = ["NoticeIntake"]

log = logging.getLogger("sco.agent")


class NoticeIntake:
    """Turns this node's raw notice messages into notices it may act on; counts and logs the rest."""

    def __init__(self, node: NodeIdentity, metrics: Metrics, monotonic: Callable[[], float]) -> None:
        """Check notices for ``node``; count into ``metrics``; time receipts and log limits on ``monotonic``."""
        self.node = node
        self.metrics = metrics
        self.monotonic = monotonic
        self.refusals = RefusalLog()
        self.flood = FloodBound()

    def from_nats(self, data: bytes, kind: str) -> Notice | None:
        """The notice in a NATS message on a ``kind`` subject, or None when it is refused."""
        received = self.monotonic()
        refusal = check_raw(data, "nats")
        if refusal is not None:
            self.refuse(refusal, "nats")
            return None
        try:
            return parse_notice(data, "nats", received, default_kind=kind)
        except AgentError as exc:
            self.refuse(Refusal("malformed", str(exc)[:300]), "nats")
            return None

    def from_metadata(self, data: bytes) -> list[Notice]:
        """The notices in the metadata endpoint's document; none when the document is refused."""
        refusal = check_raw(data, "metadata", MAX_METADATA_BYTES)
        if refusal is not None:
            self.refuse(refusal, "metadata")
            return []
        try:
            return parse_metadata(data, self.monotonic())
        except AgentError as exc:
            self.refuse(Refusal("malformed", str(exc)[:300]), "metadata")
            return []

    def plausible(self, notice: Notice) -> bool:
        """True when ``notice`` may be acted on; else it is refused (counted, logged) and False."""
        refusal = check_notice(notice, self.node)
        if refusal is not None:
            self.refuse(refusal, notice.channel)
        return refusal is None

    def refuse(self, refusal: Refusal, channel: str) -> None:
        """Count a refused notice by channel and reason; log its reason at most once a minute."""
        self.metrics.inc("sco_agent_notices_refused_total", channel=channel, reason=refusal.reason)
        if self.refusals.due(refusal.reason, self.monotonic()):
            log.warning("notice refused (%s), not acted on: %s; further %s refusals are counted in "
                        "sco_agent_notices_refused_total and logged once a minute", refusal.reason,
                        refusal.message, refusal.reason)

    def count(self, notice: Notice, decision: Coalesced) -> bool:
        """Count a notice that starts no drain (``agent.notice.coalesce``); True when it still gets its event."""
        if decision.verdict is Verdict.DUPLICATE:
            self.metrics.inc("sco_agent_notices_duplicate_total", channel=notice.channel, kind=notice.kind)
            return False
        self.metrics.inc("sco_agent_notices_total", channel=notice.channel, kind=notice.kind)
        if decision.verdict is Verdict.RECORD and self.flood.record():
            return True
        self.metrics.inc("sco_agent_notices_coalesced_total", channel=notice.channel, kind=notice.kind)
        return False
