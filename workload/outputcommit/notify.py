"""Boundaries of the quarantine path: where the QUARANTINED event goes and how the owner hears of it.

``EventPublisher`` — production: :class:`NatsPublisher` (core NATS publish with ``Nats-Msg-Id``; in the
estate the quarantine subject is bridged to a Kafka topic per partition, ADR-21/25). ``OwnerNotifier`` —
production: :class:`SmtpNotifier` (standard library). Each has a recording double beside it.
"""

from __future__ import annotations

import asyncio
import smtplib
from collections.abc import Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Protocol

__all__ = ["EventPublisher", "NatsPublisher", "OwnerNotifier", "RecordingNotifier", "RecordingPublisher",
           "SmtpNotifier"]


class EventPublisher(Protocol):
    """Where the quarantine event is published."""

    def publish(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish ``payload`` on ``subject`` with ``msg_id`` for the server's de-duplication."""


class OwnerNotifier(Protocol):
    """How a workload's owner is told of a quarantine."""

    def notify(self, owner: str, subject: str, body: str) -> None:
        """Tell a workload's owner something (a quarantine) by mail or the like."""


@dataclass
class RecordingPublisher:
    """Test double: keeps every message."""

    messages: list[tuple[str, bytes, str]] = field(default_factory=list)

    def publish(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Keep the message."""
        self.messages.append((subject, payload, msg_id))


@dataclass
class RecordingNotifier:
    """Test double: keeps every notification."""

    sent: list[tuple[str, str, str]] = field(default_factory=list)

    def notify(self, owner: str, subject: str, body: str) -> None:
        """Keep the notification."""
        self.sent.append((owner, subject, body))


class NatsPublisher:
    """Publishes on core NATS (one short connection per call: quarantines are rare).

    ``url``: one server, or every server of a cluster (a list, or comma-separated as ``SCO_NATS_URL`` holds it);
    the connection tries each in turn, so a quarantine is published while one member of the cluster is down.
    """

    def __init__(self, url: str | Sequence[str], timeout_s: float = 5.0) -> None:
        parts = url.split(",") if isinstance(url, str) else list(url)
        self.servers = [part.strip() for part in parts if part.strip()]
        if not self.servers:
            raise ValueError(f"NatsPublisher: no NATS server in url={url!r}; give nats://host:port, or a "
                             "comma-separated list of a cluster's servers")
        self.timeout_s = timeout_s

    def publish(self, subject: str, payload: bytes, msg_id: str) -> None:
        """Publish on core NATS over a short connection, trying each server in turn."""
        async def go() -> None:
            import nats

            nc = await nats.connect(self.servers, connect_timeout=self.timeout_s, max_reconnect_attempts=0,
                                   dont_randomize=True)
            try:
                await nc.publish(subject, payload, headers={"Nats-Msg-Id": msg_id})
                await nc.flush(timeout=max(1, int(self.timeout_s)))
            finally:
                await nc.close()

        asyncio.run(go())


class SmtpNotifier:
    """Mails the owner through an SMTP server."""

    def __init__(self, host: str, port: int = 25, sender: str = "sco@localhost") -> None:
        self.host, self.port, self.sender = host, port, sender

    def notify(self, owner: str, subject: str, body: str) -> None:
        """Send the notification as a mail through the SMTP server."""
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = self.sender, owner, subject
        msg.set_content(body)
        with smtplib.SMTP(self.host, self.port, timeout=10) as smtp:
            smtp.send_message(msg)
