"""The names on the wire between ``sco contracts compile``, the distributor, the agents and the controllers.

One place for what each side spells: the bundle file names a compile writes and the distributor serves
(``<root>/<region>/<cluster>/<file>``), the signature suffixes, the URL of a partition's file and the ETag
rule (a strong tag of the bytes' SHA-256, compared weakly as RFC 9110 says for ``If-None-Match``).
Standard library only: the agent imports it.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "AGENT_BUNDLE",
    "AGENT_FILES",
    "AGENT_SIGNATURE",
    "CONTROLLER_BUNDLE",
    "CONTROLLER_FILES",
    "CONTROLLER_GOVERNANCE_SIGNATURE",
    "CONTROLLER_SIGNATURE",
    "GOVERNANCE_SIG_SUFFIX",
    "SIG_SUFFIX",
    "etag_matches",
    "etag_of",
    "file_url",
]

SIG_SUFFIX = ".sig"
GOVERNANCE_SIG_SUFFIX = ".governance.sig"

AGENT_BUNDLE = "agent-bundle.json"
AGENT_SIGNATURE = AGENT_BUNDLE + SIG_SUFFIX
CONTROLLER_BUNDLE = "controller-bundle.json"
CONTROLLER_SIGNATURE = CONTROLLER_BUNDLE + SIG_SUFFIX
CONTROLLER_GOVERNANCE_SIGNATURE = CONTROLLER_BUNDLE + GOVERNANCE_SIG_SUFFIX

# What the distributor serves of a partition, the bundle first.
AGENT_FILES = (AGENT_BUNDLE, AGENT_SIGNATURE)
CONTROLLER_FILES = (CONTROLLER_BUNDLE, CONTROLLER_SIGNATURE, CONTROLLER_GOVERNANCE_SIGNATURE)


def file_url(base_url: str, partition: str, name: str) -> str:
    """The URL of one served file: ``<base>/<region>/<cluster>/<name>``."""
    return f"{base_url.rstrip('/')}/{partition.strip('/')}/{name}"


def etag_of(data: bytes) -> str:
    """The strong, quoted ETag the distributor sends for a file: ``"sha256:<hex>"``."""
    return f'"sha256:{hashlib.sha256(data).hexdigest()}"'


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 weak comparison of ``If-None-Match`` (a list, or ``*``) with ``etag``."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    bare = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == bare for tag in if_none_match.split(","))
