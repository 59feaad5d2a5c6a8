"""The ``--metrics-*`` options every long-running ``sco`` process shares, and the endpoint they start (ADR-28):
one port per process, bearer token required (stores.telemetry)."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from sco.errors import CliError

__all__ = ["add_metrics_args", "start_metrics"]


def add_metrics_args(p: argparse.ArgumentParser) -> None:
    """``--metrics-port``, ``--metrics-host``, ``--metrics-token-file`` (each with an environment default)."""
    p.add_argument("--metrics-port", type=int, default=int(os.environ.get("SCO_METRICS_PORT") or 0),
                   help="serve Prometheus metrics at /metrics, and the probes /healthz and /readyz, on this port "
                        "(default $SCO_METRICS_PORT or 0: off)")
    p.add_argument("--metrics-host", default=os.environ.get("SCO_METRICS_HOST") or "127.0.0.1",
                   help="address of the metrics endpoint (default $SCO_METRICS_HOST or 127.0.0.1; in a pod 0.0.0.0, "
                        "so Prometheus and the kubelet reach it)")
    p.add_argument("--metrics-token-file", type=Path, default=None,
                   help="file with the bearer token every scrape must send (default $SCO_METRICS_TOKEN_FILE); "
                        "required with --metrics-port")


def start_metrics(args: argparse.Namespace, registry: Any, what: str, ready: Any = None) -> Any:
    """Start the endpoint when ``--metrics-port`` is set; None otherwise. ``CliError`` (code MET001) on a missing
    token or a port that cannot be bound."""
    from stores.telemetry import TelemetryError, serve

    port = int(getattr(args, "metrics_port", 0) or 0)
    if not port:
        return None
    if not 0 < port < 65536:
        raise CliError(f"--metrics-port {port}: must be 1..65535 (or 0 for no metrics endpoint)")
    token = args.metrics_token_file or (Path(os.environ["SCO_METRICS_TOKEN_FILE"])
                                        if os.environ.get("SCO_METRICS_TOKEN_FILE") else None)
    if token is None:
        raise CliError("MET001: --metrics-port needs --metrics-token-file (or SCO_METRICS_TOKEN_FILE): every scrape "
                       "must present a bearer token; give Prometheus the same file as authorization.credentials_file")
    try:
        server = serve(registry, args.metrics_host, port, token, ready)
    except TelemetryError as exc:
        raise CliError(str(exc)) from None
    logging.getLogger(__name__).info("%s: metrics at http://%s:%d/metrics (bearer token)", what, args.metrics_host,
                                     server.port)
    return server
