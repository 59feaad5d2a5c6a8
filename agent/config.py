"""The agent's configuration: the user-data written at launch plus the node's local settings.

User-data (``/etc/sco/agent-userdata.json``, written by cloud-init; format in docs/agent.md) says who the
node is, where its relay, metadata endpoint and distributor are, and carries the signed bundle. Local
settings come from ``SCO_AGENT_*`` environment variables or command-line flags (``sco-agent run --help``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contracts import agent_userdata as wire

from .model import AgentError, NodeIdentity

__all__ = ["AgentConfig", "UserData", "load_userdata", "userdata_document"]

USERDATA_KIND = wire.USERDATA_KIND
SCHEDULERS = ("slurm", "kubernetes")


@dataclass(frozen=True)
class UserData:
    """What the launch wrote for this node: its identity, where to listen and the first bundle."""

    node: NodeIdentity
    nats_urls: tuple[str, ...]
    metadata_url: str | None
    distributor_url: str | None
    bundle: bytes | None
    bundle_sig: bytes | None


def _field(doc: dict[str, Any], name: str, source: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise AgentError(f"user-data {source}: field {name!r} is {value!r}; it must be a non-empty string "
                         "(see docs/agent.md, 'User-data').")
    _rendered(name, value, source)
    return value


def _rendered(name: str, value: str, source: str) -> None:
    if wire.unrendered(value):
        raise AgentError(f"user-data {source}: field {name!r} is {value!r}, a template cloud-init did not render; "
                         "the cloud-config must start with '## template: jinja' and the instance data must have "
                         "the variable (cloud-init query --all).")


def parse_userdata(data: bytes, source: str = "<user-data>") -> UserData:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AgentError(f"user-data {source} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("kind") != USERDATA_KIND:
        raise AgentError(f"user-data {source}: kind must be {USERDATA_KIND!r}.")
    scheduler = _field(doc, "scheduler", source)
    if scheduler not in SCHEDULERS:
        raise AgentError(f"user-data {source}: scheduler {scheduler!r} is not one of {', '.join(SCHEDULERS)}.")
    node = NodeIdentity(region=_field(doc, "region", source), partition=_field(doc, "partition", source),
                        instance=_field(doc, "instance", source), node_name=_field(doc, "node_name", source),
                        pool=doc.get("pool") or None, scheduler=scheduler)
    nats = doc.get("nats_urls") or ([doc["nats_url"]] if doc.get("nats_url") else [])
    for name, value in (("metadata_url", doc.get("metadata_url")), ("distributor_url", doc.get("distributor_url")),
                        *(("nats_urls", str(u)) for u in nats)):
        if isinstance(value, str):
            _rendered(name, value, source)
    bundle = sig = None
    if doc.get("bundle"):
        try:
            bundle = base64.b64decode(str(doc["bundle"]), validate=True)
        except (binascii.Error, ValueError):
            raise AgentError(f"user-data {source}: 'bundle' is not base64 of agent-bundle.json.") from None
        sig = str(doc.get("bundle_sig", "")).strip().encode()
    return UserData(node=node, nats_urls=tuple(str(u) for u in nats), metadata_url=doc.get("metadata_url") or None,
                    distributor_url=doc.get("distributor_url") or None, bundle=bundle, bundle_sig=sig)


def load_userdata(path: Path) -> UserData:
    """Read and parse the user-data file.

    Raises:
        AgentError: The file cannot be read or is not usable user-data.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AgentError(f"cannot read user-data {path}: {exc.strerror}; cloud-init writes it "
                         "(deploy/agent/cloud-init.yaml).") from exc
    return parse_userdata(data, str(path))


def userdata_document(node: NodeIdentity, bundle: bytes, bundle_sig: bytes, nats_urls: list[str],
                      metadata_url: str | None = None, distributor_url: str | None = None) -> dict[str, Any]:
    """The user-data JSON the controller writes at launch (``contracts.agent_userdata``; also used by tests)."""
    return wire.userdata_document(region=node.region, partition=node.partition, pool=node.pool,
                                  instance=node.instance, node_name=node.node_name, scheduler=node.scheduler,
                                  nats_urls=nats_urls, metadata_url=metadata_url, distributor_url=distributor_url,
                                  bundle=bundle, bundle_sig=bundle_sig)


@dataclass(frozen=True)
class AgentConfig:
    """Local settings; every field has an ``SCO_AGENT_<NAME>`` environment variable."""

    userdata: Path = Path("/etc/sco/agent-userdata.json")
    public_key: Path = Path("/etc/sco/bundle-signing.pub")  # baked into the image
    state_dir: Path = Path("/var/lib/sco")
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464  # 0 disables the endpoint
    refresh_s: float = 60.0  # distributor refresh interval, seconds
    metadata_poll_s: float = 5.0  # metadata endpoint poll interval, seconds
    scheduler_timeout_s: float = 0.8  # a scheduler call slower than this -> local drain (ADR-14)
    spool_max_events: int = 10_000
    spool_max_bytes: int = 16 * 1024 * 1024
    spool_fsync: bool = True
    nats_token_file: Path | None = None  # per-instance relay token (written by cloud-init)
    nats_password_file: Path | None = None  # or the instance's own NATS user's password (user agent.<region>.<id>)
    nats_creds: Path | None = None  # or a NATS .creds file (JWT + nkey seed; needs the `nkeys` package)
    slurm_conf: str | None = None  # SLURM_CONF for scontrol/squeue/scancel
    slurm_bin: str = ""  # directory of the Slurm client binaries ("" = PATH)
    kube_api: str = "https://kubernetes.default.svc"
    kube_token_file: Path = Path("/var/run/secrets/sco-agent/token")  # node-bound ServiceAccount token
    kube_ca_file: Path | None = None
    local_drain_command: str = "systemctl poweroff"  # Kubernetes local path (kubelet graceful shutdown)
    revoke_url: str | None = None  # OpenBao-style revoke-self endpoint for the node's own token (ADR-31)
    token_files: tuple[Path, ...] = field(default_factory=tuple)  # removed at the end of a drain (ADR-31)
    leases_dir: Path | None = None  # work leases the node holds: one JSON file each, released after drain

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> AgentConfig:
        """The defaults, overridden by ``SCO_AGENT_<FIELD>`` variables of ``env``, then by ``overrides``."""
        env = dict(os.environ) if env is None else env
        cfg = cls()
        values: dict[str, Any] = {}
        for name, default in cfg.__dict__.items():
            raw = env.get(f"SCO_AGENT_{name.upper()}")
            if raw is None:
                continue
            try:
                if isinstance(default, bool):
                    values[name] = raw.lower() in ("1", "true", "yes")
                elif isinstance(default, int):
                    values[name] = int(raw)
                elif isinstance(default, float):
                    values[name] = float(raw)
                elif isinstance(default, tuple):
                    values[name] = tuple(Path(p) for p in raw.split(":") if p)
                elif name in ("kube_ca_file", "leases_dir", "nats_token_file", "nats_password_file", "nats_creds") \
                        or isinstance(default, Path):
                    values[name] = Path(raw)
                else:
                    values[name] = raw
            except ValueError:
                raise AgentError(f"SCO_AGENT_{name.upper()}={raw!r} is not a valid "
                                 f"{type(default).__name__}.") from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        return replace(cfg, **values)
