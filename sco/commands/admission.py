"""``sco contracts sync-admission``: write the admission data (Kubernetes ConfigMap, Slurm job_submit data file)
from a controller bundle, after verifying its signature (ADR-04)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import CliError

__all__ = ["register_sync_admission"]


def register_sync_admission(cmds: Any) -> None:
    """Add ``sco contracts sync-admission`` to the contracts commands."""
    p = cmds.add_parser("sync-admission",
                        help="write the admission ConfigMap and/or the Slurm job_submit.lua data from a signed bundle")
    p.add_argument("--bundle", type=Path, required=True, help="controller-bundle.json (with its .sig beside it)")
    p.add_argument("--key", type=Path, required=True, help="bundle signing public key (PEM)")
    p.add_argument("--governance-key", type=Path, help="governance public key (PEM), when governed fields changed")
    p.add_argument("--configmap-out", type=Path, help="write the Kubernetes ConfigMap (YAML) here")
    p.add_argument("--lua-out", type=Path, help="write the job_submit.lua data file here (sco-admission.txt)")
    p.add_argument("--reclaimable-partition", action="append", default=None, metavar="NAME",
                   help="a reclaimable Slurm partition (repeatable; default: reclaimable)")
    p.add_argument("--namespace", default=None, help="ConfigMap namespace (default: sco-system)")
    p.add_argument("--name", default=None, help="ConfigMap name (default: sco-admission-contracts)")
    p.set_defaults(handler=_sync)


def _sync(args: argparse.Namespace) -> int:
    from contracts.bundle_verify import BundleError, verify_bundle
    from controllers.admission.sync import (
        CONFIGMAP_NAME,
        CONFIGMAP_NAMESPACE,
        admission_entries,
        render_configmap,
        render_lua_data,
        write_atomically,
    )

    if args.configmap_out is None and args.lua_out is None:
        raise CliError("nothing to write: pass --configmap-out <file> and/or --lua-out <file>")
    try:
        bundle = verify_bundle(args.bundle, args.key, args.governance_key)
    except BundleError as exc:
        reason = str(exc).rstrip(".")
        raise CliError(f"refusing to sync admission from {args.bundle}: {reason}; the previous admission "
                       "data stays in force", code=1) from None
    payload = bundle.payload
    try:
        if args.configmap_out is not None:
            text = render_configmap(payload, args.name or CONFIGMAP_NAME, args.namespace or CONFIGMAP_NAMESPACE)
            write_atomically(args.configmap_out, text)
            n = len(admission_entries(payload, "kubernetes"))
            print(f"{args.configmap_out}: ConfigMap with {n} published Kubernetes contract version(s) from "
                  f"{payload.get('partition')} generation {bundle.generation}")
        if args.lua_out is not None:
            parts = args.reclaimable_partition or ["reclaimable"]
            write_atomically(args.lua_out, render_lua_data(payload, parts))
            n = len(admission_entries(payload, "slurm"))
            print(f"{args.lua_out}: {n} published Slurm contract version(s) for partition(s) {', '.join(parts)} "
                  f"from {payload.get('partition')} generation {bundle.generation}")
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return 0
