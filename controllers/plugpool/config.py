"""plugpool's configuration file (YAML), exactly as in the spec, with clear rejection messages."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from .units import parse_duration, parse_quantity

__all__ = [
    "ConfigError",
    "Credentials",
    "NodeConfig",
    "NodeGroupConfig",
    "PlugConfig",
    "PlugPoolConfig",
    "PowerOffConfig",
    "TemplateConfig",
    "credentials_from_env",
    "load_config",
    "parse_config",
]


def _duration(value: Any) -> float:
    return parse_duration(value)


def _quantity(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError(f'{value!r} is not a Kubernetes quantity; write it as a string such as "64Gi"')
    if parse_quantity(value) < 0:
        raise ValueError(f"{value!r} is negative")
    return value


Duration = Annotated[float, BeforeValidator(_duration)]
Quantity = Annotated[str, BeforeValidator(_quantity)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class PlugConfig(_Model):
    url: str = Field(description="base URL of the ESPHome web server, e.g. http://plug-worker-1.example")
    switch: str = Field(description="the relay switch entity id served at /switch/<id>")

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f'{v!r} is not an http(s) URL; write e.g. "http://plug-worker-1.example"')
        return v.rstrip("/")

    @property
    def key(self) -> tuple[str, str]:
        """The plug's identity (URL and switch, case-insensitive): two nodes may not share it."""
        return (self.url.lower(), self.switch.lower())


class NodeConfig(_Model):
    name: str
    plug: PlugConfig


class TemplateConfig(_Model):
    cpu: Quantity
    memory: Quantity
    pods: Quantity = "110"
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[dict[str, str]] = Field(default_factory=list)

    @field_validator("taints")
    @classmethod
    def _taints(cls, v: list[dict[str, str]]) -> list[dict[str, str]]:
        for i, t in enumerate(v):
            unknown = set(t) - {"key", "value", "effect"}
            if unknown or "key" not in t or t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValueError(
                    f"taint {i} {t!r} must be {{key, value?, effect}} with effect NoSchedule, "
                    "PreferNoSchedule or NoExecute"
                )
        return v


class NodeGroupConfig(_Model):
    id: str
    min_size: int = Field(0, alias="minSize", ge=0)
    max_size: int = Field(alias="maxSize", ge=0)
    template: TemplateConfig
    nodes: list[NodeConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _sizes(self) -> NodeGroupConfig:
        if self.max_size > len(self.nodes):
            raise ValueError(
                f"maxSize {self.max_size} is above the {len(self.nodes)} node(s) listed in group {self.id!r}; "
                f"lower maxSize to at most {len(self.nodes)} or list more nodes"
            )
        if self.min_size > self.max_size:
            raise ValueError(f"minSize {self.min_size} is above maxSize {self.max_size} in group {self.id!r}")
        return self


class PowerOffConfig(_Model):
    namespace: str = "plugpool"
    image: str = "busybox:1.37.0"
    not_ready_timeout: Duration = Field(300.0, alias="notReadyTimeout")
    grace: Duration = 120.0


class TlsConfig(_Model):
    """gRPC over TLS with client certificates, as cluster-autoscaler's externalgrpc provider speaks it (its
    cloud-config's ``cert``/``key``/``cacert``): the server's certificate and key, and the CA that signs the
    client certificate cluster-autoscaler presents (required: a client without one is refused)."""

    cert: Path = Field(description="the server's certificate chain (PEM)")
    key: Path = Field(description="the server's private key (PEM)")
    client_ca: Path = Field(alias="clientCA", description="the CA bundle client certificates must chain to (PEM)")


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


class PlugPoolConfig(_Model):
    listen: str = "127.0.0.1:8086"
    tls: TlsConfig | None = None
    # plaintext gRPC, for loopback tests only: any local user could switch the plugs
    insecure_loopback: bool = Field(False, alias="insecureLoopback")
    provider_id_prefix: str = Field("k3s://", alias="providerIDPrefix")
    power_off: PowerOffConfig = Field(default_factory=PowerOffConfig, alias="powerOff")
    node_groups: list[NodeGroupConfig] = Field(alias="nodeGroups", min_length=1)

    @model_validator(mode="after")
    def _transport(self) -> PlugPoolConfig:
        host = self.listen.rsplit(":", 1)[0]
        if self.tls is None and not self.insecure_loopback:
            raise ValueError("PPL010 no tls: give tls.cert, tls.key and tls.clientCA (cluster-autoscaler's "
                             "externalgrpc cert/key/cacert), or insecureLoopback: true for a loopback test")
        if self.tls is None and host not in _LOOPBACK:
            raise ValueError(f"PPL011 insecureLoopback with listen {self.listen!r}: plaintext only on 127.0.0.1, "
                             "localhost or [::1]; configure tls to listen elsewhere")
        return self

    @model_validator(mode="after")
    def _unique(self) -> PlugPoolConfig:
        groups: set[str] = set()
        nodes: dict[str, str] = {}
        plugs: dict[tuple[str, str], str] = {}
        for group in self.node_groups:
            if group.id in groups:
                raise ValueError(f"node group id {group.id!r} appears twice; give each group its own id")
            groups.add(group.id)
            for node in group.nodes:
                if node.name in nodes:
                    raise ValueError(
                        f"node {node.name!r} is listed twice (groups {nodes[node.name]!r} and "
                        f"{group.id!r}); list each machine once"
                    )
                nodes[node.name] = group.id
                if node.plug.key in plugs:
                    raise ValueError(
                        f"nodes {plugs[node.plug.key]!r} and {node.name!r} share the plug {node.plug.url} switch "
                        f"{node.plug.switch!r}; each plug powers exactly one machine, give each node its own plug"
                    )
                plugs[node.plug.key] = node.name
        return self

    def provider_id(self, node_name: str) -> str:
        """The providerID of the named node."""
        return f"{self.provider_id_prefix}{node_name}"

    @property
    def all_nodes(self) -> list[tuple[NodeGroupConfig, NodeConfig]]:
        """Every (node group, node) pair of the configuration."""
        return [(g, n) for g in self.node_groups for n in g.nodes]


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("function-") or part in ("str", "int"):
            continue
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


def _format(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where, msg = _where(err["loc"]), err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field {err['loc'][-1]!r}; remove it or check its spelling against docs/plugpool.md"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{where}: {msg}")
    return "; ".join(lines)


def parse_config(data: Any, source: str = "config") -> PlugPoolConfig:
    """The configuration from parsed YAML; raises ``ConfigError`` naming the field and the fix."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a YAML mapping, got {type(data).__name__}")
    try:
        return PlugPoolConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_format(exc)}") from None


def load_config(path: Path) -> PlugPoolConfig:
    """The configuration from a YAML file; raises ``ConfigError`` when unreadable or invalid."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    return parse_config(data, str(path))


class Credentials(_Model):
    username: str
    password: str = Field(repr=False)


def credentials_from_env(env: dict[str, str] | None = None) -> Credentials | None:
    """PLUGPOOL_PLUG_USERNAME / PLUGPOOL_PLUG_PASSWORD; None when neither is set (plugs without auth)."""
    env = dict(os.environ) if env is None else env
    user, password = env.get("PLUGPOOL_PLUG_USERNAME"), env.get("PLUGPOOL_PLUG_PASSWORD")
    if user is None and password is None:
        return None
    if not user or password is None:
        raise ConfigError(
            "set both PLUGPOOL_PLUG_USERNAME and PLUGPOOL_PLUG_PASSWORD (the plugs' web_server auth), or neither"
        )
    return Credentials(username=user, password=password)
