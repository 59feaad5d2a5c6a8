"""The user-data a launch hands a node's agent (ADR-13, ADR-15, ADR-17), and where cloud-init writes it.

The one record the controller writes and the agent reads.

The controller renders it into a cloud-config (``controllers.controller.userdata``); the agent parses it
(``agent.config.parse_userdata``). Standard library only: the agent imports this module.
"""

from __future__ import annotations

import base64
from typing import Any

__all__ = [
    "AGENT_ENV_PATH",
    "AGENT_UNIT",
    "INSTANCE_ID",
    "LOCAL_HOSTNAME",
    "NATS_PASSWORD_PATH",
    "UNRENDERED_MARKERS",
    "USERDATA_KIND",
    "USERDATA_PATH",
    "unrendered",
    "userdata_document",
]

USERDATA_KIND = "AgentUserData"
USERDATA_PATH = "/etc/sco/agent-userdata.json"  # SCO_AGENT_USERDATA of the unit
NATS_PASSWORD_PATH = "/etc/sco/nats.password"  # the instance's own NATS password (removed at the end of a drain)
AGENT_ENV_PATH = "/etc/sco/agent.env"  # the unit's EnvironmentFile
AGENT_UNIT = "sco-agent.service"

# cloud-init's jinja names for what only the booted instance knows (``cloud-init query --all``, v1 keys)
INSTANCE_ID = "{{ v1.instance_id }}"
LOCAL_HOSTNAME = "{{ v1.local_hostname }}"

# What a value still holds when cloud-init did not render it: the template itself, or cloud-init's
# replacement for a variable its instance data lacks.
UNRENDERED_MARKERS = ("{{", "{%", "CI_MISSING_JINJA_VAR")


def unrendered(value: str) -> bool:
    """True when ``value`` is (or holds) a jinja template cloud-init did not render."""
    return any(marker in value for marker in UNRENDERED_MARKERS)


def userdata_document(*, region: str, partition: str, pool: str | None, instance: str, node_name: str,
                      scheduler: str, nats_urls: list[str] | tuple[str, ...], metadata_url: str | None,
                      distributor_url: str | None, bundle: bytes, bundle_sig: bytes) -> dict[str, Any]:
    """The user-data JSON (docs/agent.md, "User-data"): who the node is, where its channels are, the bundle."""
    return {"apiVersion": "sco/v1", "kind": USERDATA_KIND, "region": region, "partition": partition,
            "pool": pool, "instance": instance, "node_name": node_name, "scheduler": scheduler,
            "nats_urls": list(nats_urls), "metadata_url": metadata_url, "distributor_url": distributor_url,
            "bundle": base64.b64encode(bundle).decode(), "bundle_sig": bundle_sig.decode().strip()}
