"""``sco controller run --distributor-url``: the controller refreshes its own bundle from the distributor
(docs/controller.md "Refreshing its own bundle"), and the revoker a terminated instance meets (ADR-31).

The controller reads the distributor as the ``controller`` role: a bearer token from ``--distributor-token-file``
or, with ``--agent-credentials stack``, the stack's controller credential (``$SCO_HOME/credentials.json``).
At start the served bundle is judged against ``--bundle`` (a newer one verified the same way wins); then every
pass is followed by one poll (``controllers.controller.bundle_refresh``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sco.cli import CliError

__all__ = ["add_refresh_options", "authorization", "controller_feed", "refresher", "revoker", "startup_bundle"]


def add_refresh_options(p: argparse.ArgumentParser) -> None:
    """The controller's own credential for the distributor."""
    p.add_argument("--distributor-token-file", type=Path, default=None,
                   help="file with the controller's bearer token for --distributor-url (default with "
                        "--agent-credentials stack: the stack's controller credential). With --distributor-url the "
                        "controller refreshes its own bundle from the distributor between passes")


def authorization(args: argparse.Namespace) -> str:
    """The controller's ``Authorization`` header for the distributor (``--distributor-token-file``, or the
    stack's controller credential with ``--agent-credentials stack``).

    Raises:
        CliError: neither is given or readable (names the option to give).
    """
    if args.distributor_token_file is not None:
        try:
            token = args.distributor_token_file.read_text().strip()
        except OSError as exc:
            raise CliError(f"--distributor-token-file {args.distributor_token_file}: {exc.strerror}") from exc
        if not token:
            raise CliError(f"--distributor-token-file {args.distributor_token_file} is empty: write the controller's "
                           "bearer token into it")
        return f"Bearer {token}"
    if args.agent_credentials != "stack":
        raise CliError("--distributor-url: the controller refreshes its bundle from the distributor and needs its "
                       "credential: give --distributor-token-file <file>, or --agent-credentials stack with `sco up`")
    from sco.stack import credentials as creds_mod
    from stores.config import sco_home

    path = sco_home().resolve() / creds_mod.CREDENTIALS_FILE
    try:
        return f"Bearer {json.loads(path.read_text())['nats']['controller']}"
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"--distributor-url reads the controller's credential from {path}: {exc}; run `sco up` or "
                       "give --distributor-token-file") from exc


def controller_feed(args: argparse.Namespace, held: Any) -> Any:
    """The feed of the partition's controller bundle (``held``: the verified ``--bundle``), or None without
    ``--distributor-url``."""
    if not args.distributor_url:
        return None
    from distributor import ControllerBundleFeed

    governance = args.governance_key.read_bytes() if args.governance_key is not None else None
    return ControllerBundleFeed(args.distributor_url, args.partition, args.pubkey.read_bytes(), governance,
                                authorization(args), held)


def startup_bundle(feed: Any, held: Any) -> Any:
    """At start: the distributor's bundle when it is newer and passes the same rule, else ``held`` (also
    without a feed)."""
    if feed is None:
        return held
    polled = feed.poll()
    if feed.suspect:  # files that failed the rule once are judged on a second read before they are refused
        polled = feed.poll()
    if polled.taken is not None:
        print(f"controller bundle generation {polled.taken.generation} taken from {feed.url} "
              f"(--bundle holds {held.generation})", flush=True)
        return polled.taken
    if polled.refused is not None:
        print(f"{polled.refused.code}: controller bundle from {feed.url} refused at start; --bundle generation "
              f"{held.generation} is in force: {polled.refused.message}", flush=True)
    elif polled.error:
        print(f"distributor unreachable at start ({polled.error}); --bundle generation {held.generation} is in "
              "force", flush=True)
    return held


def refresher(controller: Any, feed: Any, conn: Any, partition: str) -> Callable[[], None] | None:
    """What ``run`` calls after each pass (off the event loop): one poll, a line when a bundle is taken or
    refused; None without a feed."""
    if feed is None:
        return None
    from controllers.controller.bundle_guard import BundleGuard
    from controllers.controller.bundle_refresh import BundleRefresh
    from controllers.simregion.clock import WallClock

    refresh = BundleRefresh(controller, feed, BundleGuard(conn, partition), WallClock())

    def between_passes() -> None:
        done = refresh.between_passes()
        if done.outcome in ("taken", "refused"):
            print(f"controller bundle {done.outcome}: generation {done.generation} in force"
                  + (f" ({done.code}: {done.message})" if done.code else ""), flush=True)

    return between_passes


def revoker(provider: Any, agent_credentials: Any, region: str) -> Any:
    """What revokes a terminated instance's credentials: Keystone's application credential when the provider
    issues them, the instance's NATS user when the controller mints them; both (``CompositeRevoker``) when both.
    None when neither (log-only: ``ok: false, reason: not-configured``)."""
    from controllers.controller.revocation import CompositeRevoker, KeystoneRevoker, NatsUserRevoker

    parts: list[Any] = []
    credentials = getattr(provider, "node_credentials", None)
    if credentials is not None:
        parts.append(KeystoneRevoker(credentials))
    if agent_credentials is not None:
        parts.append(NatsUserRevoker(agent_credentials, region))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else CompositeRevoker(parts)
