"""The agent's relay credential (ADR-17): which of the node's NATS credentials the connection presents."""

from __future__ import annotations

import logging
from typing import Any

from contracts.subjects import agent_nats_name

from ..config import AgentConfig
from ..model import NodeIdentity

__all__ = ["nats_auth"]

log = logging.getLogger("sco.agent")


def nats_auth(cfg: AgentConfig, node: NodeIdentity) -> dict[str, Any]:
    """Per-instance relay credentials (ADR-17): the instance's own user, a token file or a .creds file.

    The own user is ``agent.<region>.<instance>`` with the password cloud-init wrote; a .creds file needs the
    ``nkeys`` package.
    """
    if cfg.nats_password_file is not None:
        try:
            return {"user": agent_nats_name(node.region, node.instance),
                    "password": cfg.nats_password_file.read_text().strip()}
        except OSError as exc:
            log.warning("NATS password %s unreadable: %s", cfg.nats_password_file, exc)
    if cfg.nats_token_file is not None:
        try:
            return {"token": cfg.nats_token_file.read_text().strip()}
        except OSError as exc:
            log.warning("NATS token %s unreadable: %s", cfg.nats_token_file, exc)
    if cfg.nats_creds is not None and cfg.nats_creds.exists():
        return {"user_credentials": str(cfg.nats_creds)}
    return {}
