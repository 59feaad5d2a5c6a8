"""Where ``sco controller run`` reads its claims: a JSON file (demos, fault tests), a Kubernetes cluster's pods, or
Slurm — through ``slurmrestd`` with a JWT when ``--slurm-rest-url`` is given (a controller in a cluster, whose image
has no Slurm client), else through ``squeue``/``sinfo`` on a host with the Slurm client."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from sco.cli import CliError

__all__ = ["FileSource", "add_claims_options", "claim_source"]


class FileSource:
    """Work items from a JSON file (a list of WorkItem fields), re-read every pass: demos and fault tests."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def work(self) -> list[Any]:
        """The file's work items as it reads now; an unreadable or malformed file fails the pass, naming it."""
        import json

        from controllers.controller.claims import WorkItem

        try:
            return [WorkItem(**item) for item in json.loads(self.path.read_text())]
        except (OSError, ValueError, TypeError) as exc:
            raise RuntimeError(f"claims file {self.path}: {exc}") from exc

    def idle_nodes(self) -> set[str]:
        """None: a file of claims says nothing about the scheduler's nodes."""
        return set()


def add_claims_options(p: argparse.ArgumentParser) -> None:
    """The claim source's options; the slurmrestd ones default to ``SCO_SLURM_REST_URL``, ``SCO_SLURM_USER`` and
    ``SCO_SLURM_TOKEN_FILE``."""
    p.add_argument("--slurm-partitions", default="reclaimable", help="reclaimable Slurm partitions (comma list)")
    p.add_argument("--slurm-rest-url", default=os.environ.get("SCO_SLURM_REST_URL") or "",
                   help="slurmrestd's base URL (API v0.0.38, JWT): Slurm claims through it instead of squeue/sinfo "
                        "(default SCO_SLURM_REST_URL)")
    p.add_argument("--slurm-user", default=os.environ.get("SCO_SLURM_USER") or "",
                   help="the Slurm user the token was minted for (default SCO_SLURM_USER)")
    p.add_argument("--slurm-token-file", type=Path,
                   default=Path(os.environ["SCO_SLURM_TOKEN_FILE"]) if os.environ.get("SCO_SLURM_TOKEN_FILE") else None,
                   help="file holding the JWT from `scontrol token`, re-read every pass so a rotated Secret is taken "
                        "(default SCO_SLURM_TOKEN_FILE)")
    p.add_argument("--slurm-timeout", type=float, default=10.0,
                   help="seconds a slurmrestd request may take (default 10, at most 60)")
    p.add_argument("--claims-file", type=Path, default=None,
                   help="JSON list of work items instead of Slurm (demos, fault tests)")
    p.add_argument("--kubeconfig", type=Path, default=None,
                   help="claims from a Kubernetes cluster (pods with the contract labels) instead of Slurm")
    p.add_argument("--claims-from", choices=("slurm", "kubernetes"), default="slurm",
                   help="where claims come from (default slurm); kubernetes without --kubeconfig uses the "
                        "pod's in-cluster configuration")


def _slurm_rest(args: argparse.Namespace, partitions: tuple[str, ...]) -> Any:
    from controllers.controller.claims_slurmrest import MAX_TIMEOUT_S, SlurmRestSource

    missing = [flag for flag, value in (("--slurm-user", args.slurm_user), ("--slurm-token-file",
                                                                            args.slurm_token_file)) if not value]
    if missing:
        raise CliError(f"SLURMREST006: --slurm-rest-url {args.slurm_rest_url} needs {' and '.join(missing)} (the user "
                       "a token was minted for with `scontrol token username=<user>`, and the file holding it)")
    if not 0 < args.slurm_timeout <= MAX_TIMEOUT_S:
        raise CliError(f"SLURMREST007: --slurm-timeout {args.slurm_timeout:g} must be in (0, {MAX_TIMEOUT_S:g}] "
                       "seconds: a pass waits on it")
    return SlurmRestSource(args.slurm_rest_url, args.slurm_user, str(args.slurm_token_file), partitions,
                           timeout_s=args.slurm_timeout)


def claim_source(args: argparse.Namespace) -> Any:
    """Where claims come from: a file (tests, the demo), a Kubernetes cluster's pending pods, or Slurm (slurmrestd
    with ``--slurm-rest-url``, else the Slurm client's ``squeue``)."""
    if args.claims_file:
        return FileSource(args.claims_file)
    if args.kubeconfig or args.claims_from == "kubernetes":
        from controllers.controller.claims_k8s import KubernetesSource

        from .kube_client import kube_api_client

        return KubernetesSource(kube_api_client(args.kubeconfig))  # in a pod: its in-cluster configuration
    partitions = tuple(args.slurm_partitions.split(","))
    if args.slurm_rest_url:
        return _slurm_rest(args, partitions)
    from controllers.controller.claims_slurm import SlurmSource

    return SlurmSource(partitions)
