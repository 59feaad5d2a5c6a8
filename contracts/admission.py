"""Names the admission paths share (ADR-04). Standard library only.

Kubernetes label values cannot hold ``@``, so a pod names its contract with two labels,
``sco.io/contract=<workload>`` and ``sco.io/contract-version=<version>``; the admission ConfigMap has one key
``<workload>.v<version>`` per published version. Slurm jobs carry ``--comment=contract=<workload>@<version>``.
"""

from __future__ import annotations

__all__ = [
    "CONTRACT_LABEL",
    "CONTRACT_VERSION_LABEL",
    "RECLAIMABLE_TAINT",
    "SLURM_COMMENT_FORM",
    "configmap_key",
    "slurm_comment",
]

RECLAIMABLE_TAINT = "sco.io/reclaimable"
CONTRACT_LABEL = "sco.io/contract"
CONTRACT_VERSION_LABEL = "sco.io/contract-version"
SLURM_COMMENT_FORM = "--comment=contract=<name>@<version>"


def configmap_key(workload: str, version: int | str) -> str:
    """The admission ConfigMap key of a published contract version (valid ConfigMap key characters only)."""
    return f"{workload}.v{version}"


def slurm_comment(workload: str, version: int | str) -> str:
    """The Slurm job comment that ties a job to its contract: ``contract=<workload>@<version>``."""
    return f"contract={workload}@{version}"
