"""Dead letters: what the ingest publishes to ``SCO_DEADLETTER`` and records in ``events_dead_letter``.

A dead letter normally carries the original payload with the reason in a header. One that would not fit
the server's ``max_payload`` once the headers are added (an invalid event just under the limit) is sent as
a *reference* instead — a small JSON object naming the stream, the sequence, the subject, the reason, the
size and a bounded prefix — because nats-server answers an oversize publish by closing the connection, and
nats-py never reopens a connection the server closed (the ingest wedged on that message forever).
The original stays readable in the event stream by its sequence, and in full in ``events_dead_letter``.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from contracts.subjects import EVENTS_STREAM

from .eventrows import time_text
from .nats import DEADLETTER_PREFIX, REASON_HEADER

__all__ = ["DEAD_COLUMNS", "DEAD_SUBJECT", "HEADER_ALLOWANCE", "PREFIX_BYTES", "REFERENCE_HEADER", "DeadLetter",
           "Outgoing", "outgoing"]

DEAD_COLUMNS = ("received_at", "subject", "stream_seq", "msg_id", "reason", "payload")
DEAD_SUBJECT = f"{DEADLETTER_PREFIX}.events"
REFERENCE_HEADER = "Sco-Dead-Letter-Reference"
PREFIX_BYTES = 1024
HEADER_ALLOWANCE = 512  # room kept under max_payload for the NATS/1.0 line and header framing


@dataclass(frozen=True)
class DeadLetter:
    """One message the ingest will not store, with why."""

    subject: str
    sequence: int
    msg_id: str
    data: bytes
    reason: str
    stream: str = EVENTS_STREAM

    def row(self, now: dt.datetime) -> list[Any]:
        """The ``events_dead_letter`` wire row for ``stores.eventrows.encode_rows``; the payload whole.

        ``DEAD_COLUMNS`` order, ``received_at`` as ClickHouse text.
        """
        return [time_text(now), self.subject, self.sequence, self.msg_id, self.reason,
                self.data.decode("utf-8", "backslashreplace")]


@dataclass(frozen=True)
class Outgoing:
    """A dead-letter publish: subject, payload and headers, and whether it is a reference."""

    subject: str
    payload: bytes
    headers: dict[str, str]
    reference: bool


def outgoing(dead: DeadLetter, max_payload: int) -> Outgoing:
    """The dead letter to publish: the original payload when it fits ``max_payload``, else a reference."""
    headers = {REASON_HEADER: dead.reason.replace("\n", " ").replace("\r", " ")[:1000],
               "Sco-Original-Subject": dead.subject, "Sco-Stream-Seq": str(dead.sequence),
               "Nats-Msg-Id": f"dlq-{dead.sequence}"}
    header_size = sum(len(k) + len(v) + 4 for k, v in headers.items()) + HEADER_ALLOWANCE
    if len(dead.data) + header_size <= max_payload:
        return Outgoing(DEAD_SUBJECT, dead.data, headers, reference=False)
    reference = {"reference": True, "stream": dead.stream, "sequence": dead.sequence, "subject": dead.subject,
                 "msg_id": dead.msg_id, "reason": dead.reason, "size": len(dead.data),
                 "prefix": dead.data[:PREFIX_BYTES].decode("utf-8", "backslashreplace")}
    payload = json.dumps(reference).encode()
    return Outgoing(DEAD_SUBJECT, payload, {**headers, REFERENCE_HEADER: "1"}, reference=True)
