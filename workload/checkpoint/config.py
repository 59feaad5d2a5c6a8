"""Client configuration from the environment the launcher sets (Slurm batch helper, pod spec).

| variable | meaning |
|---|---|
| ``SCO_CKPT_ENDPOINT`` | RGW endpoint, e.g. ``https://rgw.r1.example.org`` |
| ``SCO_CKPT_BUCKET`` | the workload's bucket |
| ``SCO_CKPT_WORKLOAD`` | workload name (``<workload>`` of ``<workload>@<version>``) |
| ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` | the workload's identity (STS credentials in production) |
| ``SCO_CKPT_KMS_KEY_ID`` | SSE-KMS key id — or — |
| ``SCO_CKPT_SSE_C_KEY_FILE`` | a file holding the workload's 32-byte SSE-C key (raw or base64) |
| ``SCO_CKPT_PREFIX`` | object prefix (default ``checkpoints``) |
| ``SCO_AGENT_SOCKET`` | the node agent's socket for reports and lease release (optional) |
| ``SCO_NOTICE_SOCKET`` | where the workload listens for notices (optional; the drain signal always works) |
| ``SCO_DRAIN_SIGNAL`` / ``SCO_DRAIN_BUDGET_S`` | the contract's drain signal and budget (default SIGTERM, 120) |
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path

from .client import CheckpointClient
from .errors import CheckpointError
from .store import Encryption, S3Store, s3_client

__all__ = ["client_from_env", "encryption_from_env"]


def _need(env: Mapping[str, str], name: str) -> str:
    value = env.get(name)
    if not value:
        raise CheckpointError(f"{name} is not set; the launcher sets it from the workload's contract")
    return value


def encryption_from_env(env: Mapping[str, str]) -> Encryption:
    """The checkpoint encryption the environment names (SSE-KMS key id or SSE-C key file); never none."""
    if env.get("SCO_CKPT_KMS_KEY_ID"):
        return Encryption(kms_key_id=env["SCO_CKPT_KMS_KEY_ID"])
    path = env.get("SCO_CKPT_SSE_C_KEY_FILE")
    if not path:
        raise CheckpointError("set SCO_CKPT_KMS_KEY_ID (SSE-KMS) or SCO_CKPT_SSE_C_KEY_FILE (SSE-C): "
                              "checkpoints are never written unencrypted (ADR-19)")
    raw = Path(path).read_bytes().strip()
    key = raw if len(raw) == 32 else base64.b64decode(raw)
    return Encryption(customer_key=key)


def client_from_env(env: Mapping[str, str] | None = None) -> CheckpointClient:
    """A ``CheckpointClient`` on S3 configured from the ``SCO_CKPT_*`` environment the launcher sets."""
    e = dict(os.environ if env is None else env)
    s3 = s3_client(_need(e, "SCO_CKPT_ENDPOINT"), _need(e, "AWS_ACCESS_KEY_ID"), _need(e, "AWS_SECRET_ACCESS_KEY"))
    return CheckpointClient(S3Store(s3), _need(e, "SCO_CKPT_BUCKET"), _need(e, "SCO_CKPT_WORKLOAD"),
                            encryption_from_env(e), prefix=e.get("SCO_CKPT_PREFIX", "checkpoints"))
