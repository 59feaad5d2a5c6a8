"""``sco plugpool serve|check``: the cluster-autoscaler externalgrpc provider for machines on ESPHome plugs."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from typing import Any

from ..errors import CliError

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add ``sco plugpool`` to the parser."""
    group = sub.add_parser("plugpool", help="cluster-autoscaler provider for machines on ESPHome smart plugs")
    cmds = group.add_subparsers(dest="plugpool_command", metavar="COMMAND")
    cmds.required = True
    serve = cmds.add_parser("serve", help="run the externalgrpc CloudProvider service")
    serve.add_argument("--config", type=Path, required=True, help="plugpool YAML configuration")
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.set_defaults(handler=_serve)
    check = cmds.add_parser("check", help="validate a configuration and print what it would manage")
    check.add_argument("--config", type=Path, required=True, help="plugpool YAML configuration")
    check.set_defaults(handler=_check)


def _load(path: Path) -> Any:
    from controllers.plugpool.config import ConfigError, credentials_from_env, load_config

    try:
        return load_config(path), credentials_from_env()
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _check(args: argparse.Namespace) -> int:
    config, credentials = _load(args.config)
    po = config.power_off
    print(f"{args.config}: valid")
    print(f"listen {config.listen}; node providerID = {config.provider_id_prefix}<name>")
    print(
        f"poweroff pods in namespace {po.namespace} with image {po.image}; "
        f"notReadyTimeout {_seconds(po.not_ready_timeout)}, grace {_seconds(po.grace)}"
    )
    auth = f"basic auth as {credentials.username}" if credentials else "no plug credentials (PLUGPOOL_PLUG_* unset)"
    print(f"plugs: {auth}")
    for group in config.node_groups:
        t = group.template
        print(
            f"group {group.id}: size {group.min_size}..{group.max_size}, template cpu {t.cpu} memory {t.memory} "
            f"pods {t.pods}, labels {t.labels or '{}'}, {len(t.taints)} taint(s)"
        )
        for node in group.nodes:
            print(f"  {node.name}  {config.provider_id(node.name)}  plug {node.plug.url}/switch/{node.plug.switch}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    logging.getLogger().setLevel(args.log_level)  # the handler and format: sco.cli (contracts.logsetup)
    config, credentials = _load(args.config)
    from controllers.plugpool.kube import KubernetesCluster
    from controllers.plugpool.plugs import EspHomePlugs
    from controllers.plugpool.pool import PlugPool
    from controllers.plugpool.service import start_server

    try:
        cluster = KubernetesCluster()
    except Exception as exc:
        raise CliError(
            f"cannot configure the Kubernetes client ({exc}); run in the cluster or set KUBECONFIG"
        ) from exc
    # The handlers go in before the server answers: a SIGTERM that comes right after the first RPC is a clean stop,
    # not Python's default (die with -15).
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    pool = PlugPool(config, EspHomePlugs(credentials), cluster)
    pool.start()
    try:
        if config.tls is None:  # the configuration allows it on loopback only
            logging.getLogger("plugpool").warning("PPL000 plaintext gRPC on %s (insecureLoopback): any local user "
                                                  "may call it; configure tls for cluster-autoscaler", config.listen)
        server, port = start_server(pool, config.listen, tls=config.tls)
        logging.getLogger("plugpool").info("serving externalgrpc CloudProvider on %s (port %d)", config.listen, port)
    except (OSError, RuntimeError) as exc:
        pool.stop()
        raise CliError(f"cannot listen on {config.listen} ({exc}); change listen in {args.config}") from exc
    # Wake up twice a second: the kernel may hand SIGTERM to one of gRPC's threads, and Python runs the handler
    # only when the main thread executes bytecode; a bare done.wait() could then sleep through it for good.
    while not done.wait(0.5):
        pass
    server.stop(5).wait()
    pool.stop()
    cluster.close()
    return 0
