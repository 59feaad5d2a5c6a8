"""The cloud-config a launch sends (ADR-13, ADR-15, ADR-17): what boots the node's agent.

``render`` is pure: from the partition, the pool, the workload's scheduler, the signed agent bundle, the
agent's endpoints and the launch's NATS password it builds one cloud-config document that cloud-init
renders on the instance (``## template: jinja``: the instance id and host name are known only there) into

* ``/etc/sco/agent-userdata.json`` (0600): the agent's identity, NATS URLs, metadata and distributor URLs and
  the signed bundle (``contracts.agent_userdata``);
* ``/etc/sco/nats.password`` (0600): the password of the instance's own NATS user ``agent.<region>.<id>``,
  registered by ``AgentCredentials.mint`` once the provider has said the instance's id; it is removed at the
  end of a drain (``SCO_AGENT_TOKEN_FILES``, ADR-31);
* ``/etc/sco/agent.env``: the unit's environment pointing at those files;

and enables ``sco-agent.service``. One password serves the instances of one launch request (Nova creates them
in one call with one user-data); each instance still has its own user, allowed only its own subjects.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from contracts.agent_userdata import (
    AGENT_ENV_PATH,
    AGENT_UNIT,
    INSTANCE_ID,
    LOCAL_HOSTNAME,
    NATS_PASSWORD_PATH,
    USERDATA_PATH,
    userdata_document,
)
from contracts.provider import USER_DATA_LIMIT_B64

from ..errors import UserDataError

__all__ = ["JINJA_HEADER", "NOVA_USER_DATA_LIMIT", "AgentCredentials", "LaunchUserData", "MemoryAgentCredentials",
           "UserDataError", "distributor_url", "metadata_url", "render"]

JINJA_HEADER = "## template: jinja"
NOVA_USER_DATA_LIMIT = USER_DATA_LIMIT_B64  # bytes of base64, Nova's limit on a server's user_data (the contract's)
KUBE_TOKEN_PATH = "/var/run/secrets/sco-agent/token"  # the node-bound ServiceAccount token (deploy/agent)
_TEMPLATE_OPENERS = ("{{", "{%", "{#")


class AgentCredentials(Protocol):
    """Registers an instance's own NATS user once the provider has said its id (ADR-17), and removes it when
    the instance ends (ADR-31, ``revocation.NatsUserRevoker``)."""

    def mint(self, region: str, instance_id: str, password: str, partition: str | None = None) -> None:
        """Let ``agent.<region>.<instance_id>`` log in with ``password``, on its own subjects only (and read only
        ``partition``'s agent bundle, when given)."""

    def forget(self, region: str, instance_id: str) -> bool:
        """Remove ``agent.<region>.<instance_id>``; True when it existed. Raises when it cannot be removed."""


class MemoryAgentCredentials:
    """``AgentCredentials`` that only remembers (tests): ``minted[(region, instance_id)] == password``."""

    def __init__(self) -> None:
        self.minted: dict[tuple[str, str], str] = {}

    def mint(self, region: str, instance_id: str, password: str, partition: str | None = None) -> None:
        """Remember the instance's password."""
        self.minted[(region, instance_id)] = password

    def forget(self, region: str, instance_id: str) -> bool:
        """Forget the instance's password; True when there was one."""
        return self.minted.pop((region, instance_id), None) is not None


@dataclass(frozen=True)
class LaunchUserData:
    """Everything one launch request's user-data depends on."""

    region: str
    partition: str                       # "<region>/<cluster>"
    pool: str | None                     # the launch's pool (None: not known, e.g. `sco controller user-data`)
    scheduler: str                       # slurm | kubernetes (the workload's contract)
    bundle: bytes                        # agent-bundle.json, byte for byte
    bundle_sig: bytes                    # its detached signature (base64 text)
    nats_urls: tuple[str, ...] = ()      # the hall relay, without credentials
    nats_password: str | None = None     # the launch's password for its instances' own NATS users
    metadata_url: str | None = None      # template: "{instance}" stands for the instance's id
    distributor_url: str | None = None   # base URL: the partition's bundles are under <base>/<region>/<cluster>/


def metadata_url(template: str) -> str:
    """The instance's metadata URL as a jinja template: ``{instance}`` becomes the instance id."""
    if "{instance}" not in template:
        raise UserDataError("userdata-metadata-url", "metadata_url", template,
                            "it must name the instance with '{instance}', e.g. http://169.254.169.254/metadata/{instance}")
    return template.replace("{instance}", INSTANCE_ID)


def distributor_url(base: str, partition: str) -> str:
    """Where the partition's agent bundle is served: ``<base>/<region>/<cluster>/``."""
    if not base.startswith(("http://", "https://")):
        raise UserDataError("userdata-distributor-url", "distributor_url", base,
                            "give the distributor's http(s) base URL, e.g. https://bundles.r1:8443")
    return f"{base.rstrip('/')}/{partition.strip('/')}/"


def _literal(field: str, value: str) -> str:
    if any(opener in value for opener in _TEMPLATE_OPENERS):
        raise UserDataError("userdata-template-text", field, value,
                            "it would be read as jinja on the instance; remove '{{', '{%' and '{#'")
    return value


def _agent_json(spec: LaunchUserData) -> str:
    for field in ("region", "partition", "pool", "scheduler"):
        _literal(field, str(getattr(spec, field)))
    for url in spec.nats_urls:
        _literal("nats_urls", url)
        if "@" in url.split("://", 1)[-1].split("/", 1)[0]:
            raise UserDataError("userdata-nats-url-credentials", "nats_urls", url,
                                "give the relay's URL without credentials; each instance gets its own user")
    meta = metadata_url(_literal("metadata_url", spec.metadata_url)) if spec.metadata_url else None
    dist = distributor_url(_literal("distributor_url", spec.distributor_url), spec.partition) \
        if spec.distributor_url else None
    doc = userdata_document(region=spec.region, partition=spec.partition, pool=spec.pool, instance=INSTANCE_ID,
                            node_name=LOCAL_HOSTNAME, scheduler=spec.scheduler, nats_urls=spec.nats_urls,
                            metadata_url=meta, distributor_url=dist, bundle=spec.bundle, bundle_sig=spec.bundle_sig)
    return json.dumps(doc, separators=(",", ":"))


def _env(spec: LaunchUserData) -> str:
    tokens = [NATS_PASSWORD_PATH] if spec.nats_password else []
    if spec.scheduler == "kubernetes":
        tokens.append(KUBE_TOKEN_PATH)
    lines = ["# written by cloud-init at launch (sco controller user-data); read by sco-agent.service"]
    if spec.nats_password:
        lines.append(f"SCO_AGENT_NATS_PASSWORD_FILE={NATS_PASSWORD_PATH}")
    if tokens:
        lines.append(f"SCO_AGENT_TOKEN_FILES={':'.join(tokens)}")  # removed at the end of a drain (ADR-31)
    return "\n".join(lines) + "\n"


def _files(spec: LaunchUserData) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = [
        {"path": USERDATA_PATH, "owner": "root:root", "permissions": "0600", "content": _agent_json(spec) + "\n"},
        {"path": AGENT_ENV_PATH, "owner": "root:root", "permissions": "0600", "content": _env(spec)}]
    if spec.nats_password:
        files.append({"path": NATS_PASSWORD_PATH, "owner": "root:root", "permissions": "0600", "encoding": "b64",
                      "content": base64.b64encode(spec.nats_password.encode()).decode()})
    return files


class _Dumper(yaml.SafeDumper):
    """Multi-line text as YAML literal blocks (``|``), as a person would write the file."""


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_Dumper.add_representer(str, _text)


def render(spec: LaunchUserData) -> str:
    """The cloud-config (a jinja template for cloud-init) one launch request sends.

    Raises:
        UserDataError: a value would be read as a template, a URL is unusable, the relay is named without a
            credential for it, or the document is over Nova's user-data limit.
    """
    if spec.scheduler not in ("slurm", "kubernetes"):
        raise UserDataError("userdata-scheduler", "scheduler", spec.scheduler, "use slurm or kubernetes")
    if spec.nats_urls and not spec.nats_password:
        raise UserDataError("userdata-nats-credential", "nats_password", None,
                            "an agent given NATS URLs needs its own credential: configure AgentCredentials "
                            "(e.g. the stack's minting) or give no NATS URLs (metadata poll only)")
    files = yaml.dump({"write_files": _files(spec)}, Dumper=_Dumper, sort_keys=False, width=1 << 20)
    text = (f"{JINJA_HEADER}\n#cloud-config\n# SCO: boots this node's agent (docs/agent.md, 'Boot'); one document "
            f"per launch request\n{files}runcmd:\n  - [systemctl, daemon-reload]\n"
            f"  - [systemctl, enable, --now, {AGENT_UNIT}]\n")
    size = len(base64.b64encode(text.encode()))
    if size > NOVA_USER_DATA_LIMIT:
        raise UserDataError("userdata-too-large", "bundle", f"{len(spec.bundle)} bytes",
                            f"the user-data is {size} bytes of base64, over Nova's {NOVA_USER_DATA_LIMIT}; split the "
                            "partition's workloads or let the agent fetch the bundle from the distributor")
    return text
