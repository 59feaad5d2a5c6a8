"""``sco controller user-data``: print the cloud-config the partition's controller sends at launch, and the
options ``sco controller run`` shares with it (where the agents' relay, metadata endpoint and distributor are,
and who mints their NATS credentials)."""

from __future__ import annotations

import argparse
import json
import secrets
from pathlib import Path
from typing import Any

from sco.cli import CliError

__all__ = ["add_agent_options", "agent_bundle_feed", "agent_credentials", "agent_settings", "register_into"]


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """The options that say what a launched node's agent is told (docs/agent.md, 'Boot')."""
    p.add_argument("--agent-nats-url", action="append", default=None,
                   help="the agents' NATS relay without credentials (repeatable), or 'stack' for the one of `sco up`")
    p.add_argument("--agent-credentials", choices=("stack", "none"), default="none",
                   help="who mints each instance's own NATS user: 'stack' (the NATS of `sco up`), or none")
    p.add_argument("--metadata-url", default=None,
                   help="the agents' metadata endpoint; '{instance}' is the instance id, "
                        "e.g. http://169.254.169.254/metadata/{instance}")
    p.add_argument("--distributor-url", default=None,
                   help="the bundle distributor's base URL (`sco distributor serve`); the partition is appended. "
                        "With --agent-credentials stack, `run` also refreshes the launches' agent bundle from it")


def agent_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``ControllerSettings`` fields from the agent options."""
    urls: list[str] = []
    for url in args.agent_nats_url or []:
        if url == "stack":
            from sco.stack.manager import agent_relay_urls

            try:
                urls += agent_relay_urls()  # every member of a NATS cluster
            except RuntimeError as exc:
                raise CliError(f"--agent-nats-url stack: {exc}") from exc
            continue
        urls.append(url)
    if urls and args.agent_credentials == "none":
        raise CliError("--agent-nats-url needs --agent-credentials: each agent logs in to NATS as its own user "
                       "(use --agent-credentials stack with `sco up`, or give no relay: metadata poll only)")
    return {"nats_urls": tuple(urls), "metadata_url": args.metadata_url, "distributor_url": args.distributor_url}


def agent_credentials(args: argparse.Namespace) -> Any:
    """The ``AgentCredentials`` adapter the options name, or None."""
    if args.agent_credentials != "stack":
        return None
    from sco.stack.manager import StackAgentCredentials

    return StackAgentCredentials()


def agent_bundle_feed(args: argparse.Namespace, pubkey: Path, held: tuple[bytes, bytes] | None) -> Any:
    """With ``--distributor-url`` and ``--agent-credentials stack``: the feed that refreshes the agent bundle
    the launches carry from the distributor (as the stack's controller, by bearer token); else None."""
    if not args.distributor_url or args.agent_credentials != "stack":
        return None
    from controllers.distributor import AgentBundleFeed
    from sco.stack import credentials as creds_mod
    from stores.config import sco_home

    path = sco_home().resolve() / creds_mod.CREDENTIALS_FILE
    try:
        token = json.loads(path.read_text())["nats"]["controller"]
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"--distributor-url with --agent-credentials stack reads the controller's credential from "
                       f"{path}: {exc}; run `sco up`") from exc
    return AgentBundleFeed(args.distributor_url, args.partition, pubkey.read_bytes(), f"Bearer {token}", held=held)


def _bundles(args: argparse.Namespace) -> tuple[dict[str, Any], bytes, bytes]:
    from contracts.bundle_verify import BundleError, verify_bundle

    directory = args.bundles / args.partition
    controller, agent = directory / "controller-bundle.json", directory / "agent-bundle.json"
    try:
        payload: dict[str, Any] = verify_bundle(controller, args.pubkey, args.governance_key).payload
        raw, sig = agent.read_bytes(), agent.with_name(agent.name + ".sig").read_bytes()
    except (BundleError, OSError) as exc:
        raise CliError(f"partition {args.partition!r} in {args.bundles}: {exc}; compile it with "
                       "`sco contracts compile --out` and pass that directory as --bundles") from exc
    return payload, raw, sig


def _user_data(args: argparse.Namespace) -> int:
    from controllers.controller.userdata import LaunchUserData, UserDataError, render

    if "/" not in args.partition:
        raise CliError(f"--partition {args.partition!r} must be '<region>/<cluster>', e.g. r1/slurm-hpc")
    payload, raw, sig = _bundles(args)
    workloads = payload.get("workloads", {})
    chosen = [e for ref, e in sorted(workloads.items()) if args.workload in (None, e.get("workload"), ref)]
    if not chosen:
        raise CliError(f"--workload {args.workload!r} is not in {args.partition}: "
                       f"{', '.join(sorted(workloads)) or 'no workloads'}")
    settings = agent_settings(args)
    password = secrets.token_urlsafe(24) if settings["nats_urls"] else None
    try:
        text = render(LaunchUserData(region=args.partition.split("/")[0], partition=args.partition, pool=args.pool,
                                     scheduler=str(chosen[0].get("scheduler")), bundle=raw, bundle_sig=sig,
                                     nats_password=password, **settings))
    except UserDataError as exc:
        raise CliError(str(exc)) from exc
    print(text, end="")  # a fresh password: the controller makes one per launch and mints it per instance
    return 0


def register_into(sub: Any) -> None:
    """Add ``user-data`` to the ``sco controller`` group."""
    p = sub.add_parser("user-data", help="print the cloud-config the partition's controller sends at launch",
                       description="Print the cloud-config `sco controller run` sends with a launch of this partition "
                                   "(the same options). With a NATS relay it carries a fresh password that is minted "
                                   "nowhere: the controller makes one per launch and mints it per instance.")
    p.add_argument("--partition", required=True, help="<region>/<cluster>, e.g. r1/slurm-hpc")
    p.add_argument("--bundles", type=Path, default=Path("bundles"),
                   help="the output directory of `sco contracts compile --out` (default ./bundles)")
    p.add_argument("--pubkey", type=Path, required=True, help="bundle signing public key (PEM)")
    p.add_argument("--governance-key", type=Path, default=None, help="governance public key (ADR-30)")
    p.add_argument("--workload", default=None, help="the workload whose scheduler the node serves (default: first)")
    p.add_argument("--pool", default=None, help="the pool (the controller writes each launch's own)")
    add_agent_options(p)
    p.set_defaults(handler=_user_data)
