"""``sco controller user-data``: print the cloud-config the partition's controller sends at launch, and the
options ``sco controller run`` shares with it (where the agents' relay, metadata endpoint and distributor are,
and who mints their NATS credentials)."""

from __future__ import annotations

import argparse
import secrets
from pathlib import Path
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE, CONTROLLER_BUNDLE
from sco.cli import CliError

__all__ = ["add_agent_options", "add_agent_version_options", "agent_bundle_feed", "agent_credentials", "agent_rollout",
           "agent_settings", "register_into"]


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
                        "`run` also refreshes its own controller bundle and the launches' agent bundle from it, "
                        "as the controller (--distributor-token-file, or the stack's credential)")


def add_agent_version_options(p: argparse.ArgumentParser) -> None:
    """The agent images new launches boot (ADR-32): the current one, a candidate and the candidate's share."""
    p.add_argument("--agent-image", default=None, metavar="VERSION=IMAGE",
                   help="the current agent version and its image, e.g. 0.1.0=sco-agent-0.1.0 (default: the "
                        "provider's configured image, no version rollout)")
    p.add_argument("--agent-candidate", default=None, metavar="VERSION=IMAGE",
                   help="a candidate agent version and image for a share of new launches (needs --agent-image)")
    p.add_argument("--agent-canary-share", default=None, metavar="PCT",
                   help="percent of new launches given the candidate (default: agent_canary_share_pct of "
                        "--compiler-settings, else 5)")
    p.add_argument("--compiler-settings", type=Path, default=None, metavar="compiler.yaml",
                   help="the contract repository's compiler settings: agent_canary_share_pct (ADR-32)")


def agent_rollout(args: argparse.Namespace) -> Any:
    """The ``AgentRollout`` the version options name, or None without ``--agent-image``."""
    from decimal import Decimal, InvalidOperation

    from contracts.compiler import RepoError, load_settings
    from controllers.controller import AgentRollout, parse_agent_image
    from controllers.errors import ConfigError

    if args.agent_image is None:
        if args.agent_candidate is not None:
            raise CliError("--agent-candidate needs --agent-image: the version the other launches keep booting")
        return None
    try:
        share = (load_settings(args.compiler_settings).agent_canary_share_pct if args.agent_canary_share is None
                 else Decimal(args.agent_canary_share))
        candidate = None if args.agent_candidate is None else parse_agent_image(args.agent_candidate,
                                                                                 "--agent-candidate")
        return AgentRollout(parse_agent_image(args.agent_image, "--agent-image"), candidate, share)
    except InvalidOperation:
        raise CliError(f"--agent-canary-share {args.agent_canary_share!r} is not a number; give a percent, "
                       "e.g. 5") from None
    except (ConfigError, RepoError) as exc:
        raise CliError(str(exc)) from exc


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
    """With ``--distributor-url``: the feed that refreshes the agent bundle the launches carry from the
    distributor, as the controller (the credential ``controller_refresh`` finds: ``--distributor-token-file``
    or the stack's controller credential); else None."""
    if not args.distributor_url:
        return None
    from distributor import AgentBundleFeed

    from .controller_refresh import authorization

    return AgentBundleFeed(args.distributor_url, args.partition, pubkey.read_bytes(), authorization(args), held=held)


def _bundles(args: argparse.Namespace) -> tuple[dict[str, Any], bytes, bytes]:
    from contracts.bundle_verify import BundleError, verify_bundle

    directory = args.bundles / args.partition
    controller, agent = directory / CONTROLLER_BUNDLE, directory / AGENT_BUNDLE
    try:
        payload: dict[str, Any] = verify_bundle(controller, args.pubkey, args.governance_key).payload
        raw, sig = agent.read_bytes(), agent.with_name(AGENT_SIGNATURE).read_bytes()
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
