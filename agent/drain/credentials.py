"""Leases and tokens the node holds, released at the end of a drain (ADR-17, ADR-31). Best effort.

* Work leases: the platform client registers each lease it holds as a JSON file in ``leases_dir``
  (``{"lease_id": ..., "release_url": ...}``); the agent POSTs to ``release_url`` when one is given and
  deletes the file.
* Tokens: each file in ``token_files`` (e.g. the node-bound ServiceAccount token, NATS credentials) is
  overwritten and removed; with ``revoke_url`` set, the agent first calls it with the first token as a
  bearer (an OpenBao ``auth/token/revoke-self``-style endpoint). Node-bound Kubernetes tokens also die
  with the Node object; the controller revokes centrally on the termination event.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..httpwire import request

__all__ = ["NodeCredentials"]


def _post(url: str, token: str | None = None, timeout: float = 2.0) -> bool:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
        headers["X-Vault-Token"] = token
    try:
        status, _ = request("POST", url, b"{}", headers, timeout)
    except OSError:
        return False
    return 200 <= status < 300


class NodeCredentials:
    """The node's work leases and tokens, released and revoked at the end of a drain (best effort)."""

    def __init__(self, leases_dir: Path | None = None, token_files: tuple[Path, ...] = (),
                 revoke_url: str | None = None) -> None:
        """Leases as JSON files in ``leases_dir``; tokens in ``token_files``; ``revoke_url`` revokes the first."""
        self.leases_dir = leases_dir
        self.token_files = token_files
        self.revoke_url = revoke_url

    def release_leases(self) -> int:
        """Release every lease file (POST its ``release_url``, delete it); return how many."""
        if self.leases_dir is None or not self.leases_dir.is_dir():
            return 0
        released = 0
        for path in sorted(self.leases_dir.glob("*.json")):
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                doc = {}
            url = doc.get("release_url") if isinstance(doc, dict) else None
            if url:
                _post(str(url))
            path.unlink(missing_ok=True)
            released += 1
        return released

    def revoke_tokens(self) -> list[str]:
        """Revoke the first token at ``revoke_url``, overwrite and remove every token file; return what went."""
        revoked: list[str] = []
        tokens = [p for p in self.token_files if p.exists()]
        if self.revoke_url and tokens:
            try:
                token = tokens[0].read_text().strip()
            except OSError:
                token = ""
            if token and _post(self.revoke_url, token):
                revoked.append("revoke-self")
        for path in tokens:
            try:
                size = path.stat().st_size
                with open(path, "r+b") as fh:
                    fh.write(b"\0" * size)
                    fh.flush()
                    os.fsync(fh.fileno())
                path.unlink()
                revoked.append(str(path))
            except OSError:
                continue
        return revoked
