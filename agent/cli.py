"""``sco-agent``: the node agent's console script.

Loads only the standard library, ``cryptography``,
nats-py and the light ``contracts`` modules (no pydantic).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from contracts.bundle_wire import AGENT_BUNDLE, AGENT_SIGNATURE

from .config import AgentConfig, load_userdata, userdata_document
from .model import AgentError, NodeIdentity

__all__ = ["build_agent", "main"]


def build_agent(cfg: AgentConfig) -> object:
    """The agent for this node: its user-data, key, scheduler adapter, local actuator and credentials."""
    from .drain.credentials import NodeCredentials
    from .runtime import Agent

    userdata = load_userdata(cfg.userdata)
    try:
        key = cfg.public_key.read_bytes()
    except OSError as exc:
        raise AgentError(f"cannot read the bundle-signing public key {cfg.public_key}: {exc.strerror}; "
                         "it is baked into the image (SCO_AGENT_PUBLIC_KEY).") from exc
    node = userdata.node
    if node.scheduler == "slurm":
        from .drain.local import SlurmProcessActuator
        from .drain.slurm import SlurmAdapter

        scheduler: object = SlurmAdapter(node.node_name, cfg.slurm_conf, cfg.slurm_bin)
        actuator: object = SlurmProcessActuator(node.node_name)
    else:
        from .drain.kube import KubeAdapter
        from .drain.local import KubeletShutdownActuator

        scheduler = KubeAdapter.from_files(cfg.kube_api, node.node_name, cfg.kube_token_file, cfg.kube_ca_file)
        actuator = KubeletShutdownActuator(cfg.local_drain_command)
    creds = NodeCredentials(cfg.leases_dir, cfg.token_files or (cfg.kube_token_file,), cfg.revoke_url)
    return Agent(cfg, userdata, key, scheduler, actuator, creds)  # type: ignore[arg-type]


async def _run(cfg: AgentConfig) -> int:
    from .metrics import serve_metrics
    from .runtime import Agent

    agent = build_agent(cfg)
    assert isinstance(agent, Agent)
    await agent.start()
    server = await serve_metrics(agent.metrics, cfg.metrics_host, cfg.metrics_port) if cfg.metrics_port else None
    gc.collect()
    gc.freeze()  # what boot loaded stays: later collections scan only what the notice path allocates
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    logging.getLogger("sco.agent").info("sco-agent running for %s (%s), bundle generation %s",
                                        agent.node.instance, agent.node.node_name,
                                        agent.bundles.current.generation if agent.bundles.current else "none")
    await stop.wait()
    await agent.flush_events(timeout=5)
    await agent.stop()
    if server is not None:
        server.close()
        await server.wait_closed()
    return 0


def _config(args: argparse.Namespace) -> AgentConfig:
    return AgentConfig.from_env(userdata=args.userdata, public_key=args.public_key, state_dir=args.state_dir,
                                metrics_port=getattr(args, "metrics_port", None))


def _cmd_run(args: argparse.Namespace) -> int:
    from contracts.logsetup import configure

    configure("agent", fmt=args.log_format, level="DEBUG" if args.verbose else None)
    return asyncio.run(_run(_config(args)))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sco")
    except PackageNotFoundError:
        return "unknown"


def _nats_credential(cfg: AgentConfig, userdata: object) -> str:
    """What the agent will log in to NATS with; refuses relays named without a usable credential."""
    from contracts.subjects import agent_nats_name

    from .config import UserData

    assert isinstance(userdata, UserData)
    if not userdata.nats_urls:
        return "no NATS relay (metadata poll only)"
    for name, path in (("password", cfg.nats_password_file), ("token", cfg.nats_token_file),
                       ("creds", cfg.nats_creds)):
        if path is None:
            continue
        try:
            secret = path.read_text().strip()
        except OSError as exc:
            raise AgentError(f"NATS {name} file {path} unreadable: {exc.strerror}; cloud-init writes it "
                             "(SCO_AGENT_NATS_PASSWORD_FILE in /etc/sco/agent.env).") from exc
        if not secret:
            raise AgentError(f"NATS {name} file {path} is empty; the launch's cloud-config writes the instance's own.")
        who = agent_nats_name(userdata.node.region, userdata.node.instance) if name == "password" else name
        return f"NATS {', '.join(userdata.nats_urls)} as {who}"
    raise AgentError(f"user-data names NATS relays {', '.join(userdata.nats_urls)} but no credential is configured: "
                     "set SCO_AGENT_NATS_PASSWORD_FILE (the cloud-config's agent.env does), _TOKEN_FILE or _CREDS.")


def _cmd_check(args: argparse.Namespace) -> int:
    from .bundle import BundleStore

    cfg = _config(args)
    userdata = load_userdata(cfg.userdata)
    if userdata.bundle is None or userdata.bundle_sig is None:
        raise AgentError(f"user-data {cfg.userdata} carries no bundle; the agent would boot not ready.")
    try:
        key = cfg.public_key.read_bytes()
    except OSError as exc:
        raise AgentError(f"cannot read public key {cfg.public_key}: {exc.strerror}") from exc
    store = BundleStore(cfg.state_dir, key, userdata.node.partition)
    held = store.parse(userdata.bundle, userdata.bundle_sig, "user-data")
    nats = _nats_credential(cfg, userdata)
    print(f"ok: {held.partition} generation {held.generation}, {len(held.contracts)} workload(s): "
          + ", ".join(sorted(held.contracts)))
    node = userdata.node
    print(f"node: instance {node.instance}, name {node.node_name}, pool {node.pool}, {node.scheduler}")
    print(f"channels: {nats}; metadata {userdata.metadata_url or 'none'}; "
          f"distributor {userdata.distributor_url or 'none'}")
    return 0


def _cmd_userdata(args: argparse.Namespace) -> int:
    bundle_dir = Path(args.bundle_dir)
    raw = (bundle_dir / AGENT_BUNDLE).read_bytes()
    sig = (bundle_dir / AGENT_SIGNATURE).read_bytes()
    partition = json.loads(raw).get("partition", "")
    node = NodeIdentity(region=partition.split("/")[0], partition=partition, instance=args.instance,
                        node_name=args.node_name, pool=args.pool, scheduler=args.scheduler)
    doc = userdata_document(node, raw, sig, args.nats_url or [], args.metadata_url, args.distributor_url)
    print(json.dumps(doc, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``sco-agent run`` or ``sco-agent check``; returns the exit status."""
    from contracts.logsetup import FORMATS, default_format

    parser = argparse.ArgumentParser(prog="sco-agent", description="SCO node agent (docs/agent.md)")
    parser.add_argument("--version", action="version", version=f"sco-agent {_version()}")
    parser.add_argument("--log-format", choices=FORMATS, default=default_format(),
                        help="log lines as text or JSON (default $SCO_LOG_FORMAT or text)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (("run", "run the agent"), ("check", "verify the user-data bundle and exit")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--userdata", type=Path, default=None, help="user-data JSON (default /etc/sco/...)")
        p.add_argument("--public-key", type=Path, default=None, help="bundle-signing public key (PEM)")
        p.add_argument("--state-dir", type=Path, default=None, help="state directory (default /var/lib/sco)")
        if name == "run":
            p.add_argument("--metrics-port", type=int, default=None, help="Prometheus port (0 disables)")
            p.add_argument("-v", "--verbose", action="store_true")
        p.set_defaults(handler=_cmd_run if name == "run" else _cmd_check)
    p = sub.add_parser("userdata", help="print the user-data JSON for a node from a compiled bundle directory")
    p.add_argument("--bundle-dir", required=True, help="<out>/<region>/<cluster> written by `sco contracts compile`")
    p.add_argument("--instance", required=True)
    p.add_argument("--node-name", required=True)
    p.add_argument("--scheduler", choices=("slurm", "kubernetes"), required=True)
    p.add_argument("--pool", default=None)
    p.add_argument("--nats-url", action="append")
    p.add_argument("--metadata-url", default=None)
    p.add_argument("--distributor-url", default=None)
    p.set_defaults(handler=_cmd_userdata)
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except (AgentError, OSError) as exc:
        print(f"sco-agent: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
