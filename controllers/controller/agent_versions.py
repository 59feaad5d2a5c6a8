"""Which agent version a new launch boots (ADR-32): the agent is never upgraded in place; a candidate image
goes to a share of new launches (default 5 %), then to all, and the fleet turns over by reclamation.

The choice is a pure function of the launch's stable id (its ``launch_key``, which a retry after a crash
repeats): the SHA-256 of the id puts it in one of 10,000 buckets, and buckets below ``share_pct`` x 100 get
the candidate. So a retried launch boots the same image, and over many launches the share converges on the
setting. A multi-create launch is one Nova request with one image: its instances share the version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal

from ..errors import ConfigError

__all__ = ["AgentImage", "AgentRollout", "choose_agent", "parse_agent_image"]

_BUCKETS = 10_000


@dataclass(frozen=True)
class AgentImage:
    """An agent version and the image (Glance name) that carries it."""

    version: str
    image: str


@dataclass(frozen=True)
class AgentRollout:
    """The current agent image, the candidate (None: no rollout) and the candidate's share of new launches."""

    current: AgentImage
    candidate: AgentImage | None = None
    share_pct: Decimal = Decimal("5")

    def __post_init__(self) -> None:
        if not Decimal(0) <= self.share_pct <= Decimal(100):
            raise ConfigError(f"agent canary share {self.share_pct} is not a percentage; give 0 to 100 "
                              "(agent_canary_share_pct in compiler.yaml, default 5)")


def _bucket(stable_id: str) -> int:
    return int.from_bytes(hashlib.sha256(stable_id.encode()).digest()[:8], "big") % _BUCKETS


def choose_agent(rollout: AgentRollout, stable_id: str) -> AgentImage:
    """The image a launch with ``stable_id`` boots: the candidate for ``share_pct`` of ids, else the current."""
    if rollout.candidate is None:
        return rollout.current
    return rollout.candidate if _bucket(stable_id) < rollout.share_pct * _BUCKETS / 100 else rollout.current


def parse_agent_image(text: str, option: str) -> AgentImage:
    """``VERSION=IMAGE`` (e.g. ``0.2.0=sco-agent-0.2.0``) as an ``AgentImage``.

    Raises:
        ConfigError: not of that form (names ``option`` and the value).
    """
    version, sep, image = text.partition("=")
    if not sep or not version.strip() or not image.strip():
        raise ConfigError(f"{option} {text!r} is not VERSION=IMAGE; give e.g. 0.2.0=sco-agent-0.2.0 (the agent "
                          "version and the Glance image that carries it)")
    return AgentImage(version.strip(), image.strip())
