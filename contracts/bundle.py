"""Build and sign the per-partition bundles (ADR-03, ADR-15, ADR-30).

Per partition ``<region>/<cluster>`` the compiler writes two bundles under ``<out>/<region>/<cluster>/``:

* ``agent-bundle.json`` — only the interruption-critical fields the node needs (ADR-15): drain budget and
  signal, checkpoint mode and interval, restart semantics, advisory-drain opt-in, scheduler adapter settings.
  No floor, spend, eligibility or fallback field is in it, so a stale cache cannot affect them.
* ``controller-bundle.json`` — the full compiled contract set the controller plans with.

Each is canonical JSON signed with the bundle key (``.sig``). A change to a governed field — floor, spend
cap, approver, fallback policy — relative to the previously published controller bundle is listed in
``governed_changes`` and needs a second signature by the governance key (``.governance.sig``); without
that key the compile fails (:class:`GovernanceError`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec

from .agent_record import AgentRecord
from .bundle_verify import (
    GOVERNED_FIELDS,
    BundleError,
    governed_changes,
    read_bundle_files,
    verify_bundle_bytes,
)
from .bundle_wire import AGENT_BUNDLE, CONTROLLER_BUNDLE, GOVERNANCE_SIG_SUFFIX, SIG_SUFFIX
from .canonical import canonical_bytes, digest
from .compiler import CompiledWorkload
from .errors import GovernanceError
from .schema import API_VERSION, RestartSemantics
from .signing import public_pem, sign_blob

__all__ = [
    "AGENT_BUNDLE",
    "CONTROLLER_BUNDLE",
    "GOVERNED_FIELDS",
    "BundleError",
    "GovernanceError",
    "PublishedBundle",
    "agent_entry",
    "agent_record",
    "build_payloads",
    "governed_changes",
    "partition_dir",
    "publish",
]



@dataclass(frozen=True)
class PublishedBundle:
    """What ``publish`` wrote for one partition.

    Attributes:
        partition: ``<region>/<cluster>``.
        directory: where the two bundles and their signatures are.
        generation: the bundles' generation (unchanged when the source digest did not change).
        workloads: how many workloads the bundles carry.
        governed_changes: how many governed fields changed since the previous generation.
        unchanged: True when the source was identical and nothing new was written.
    """

    partition: str
    directory: Path
    generation: int
    workloads: int
    governed_changes: int
    unchanged: bool = False


def partition_dir(out: Path, partition: str) -> Path:
    """The directory of one partition's bundles: ``<out>/<region>/<cluster>``."""
    region, cluster = partition.split("/", 1)
    return out / region / cluster


def agent_record(w: CompiledWorkload) -> AgentRecord:
    """The interruption-critical fields of one compiled workload, as the agent reads them (ADR-15)."""
    c = w.contract
    return AgentRecord(
        workload=c.workload, version=str(c.version), tier=str(c.tier), scheduler=str(c.scheduler),
        drain_budget_s=c.drain_budget_s, drain_signal=c.drain_signal, advisory_drain=c.advisory_drain,
        checkpoint_mode=str(c.checkpoint_mode), framework=None if c.framework is None else str(c.framework),
        checkpoint_interval_min=w.interval_min, restart=str(c.restart),
        requeue=c.restart is not RestartSemantics.NOT_RESTARTABLE, max_unit_length_min=c.max_unit_length_min,
    )


def agent_entry(w: CompiledWorkload) -> dict[str, Any]:
    """The agent's bundle entry for one compiled workload: :func:`agent_record` as a dict."""
    return agent_record(w).to_entry()


def controller_entry(w: CompiledWorkload) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(w.contract.model_dump_json())
    entry["checkpoint_interval_min"] = w.interval_min
    entry["eligible_pools"] = w.eligible_pools
    entry["source_file"] = w.file
    return entry


def _read_previous(directory: Path, partition: str, public_key_pem: bytes,
                   governance_key_pem: bytes | None) -> dict[str, Any] | None:
    """The partition's previously published controller payload, only if it verifies (None when there is none).

    It is the baseline governed changes are computed against, so it must be signed by the signing key (and,
    when it lists governed changes and the governance key is at hand, countersigned by the governance key).
    """
    path = directory / CONTROLLER_BUNDLE
    if not path.exists():
        return None
    try:
        files = read_bundle_files(path)
        verified = verify_bundle_bytes(files.raw, files.signature, public_key_pem, files.governance_signature,
                                       governance_key_pem, require_governance_key=False)
    except BundleError as exc:
        raise BundleError(
            f"the previous bundle {path} does not verify ({exc.message}); it cannot be the baseline of governed "
            "changes: restore the published bundle from the distributor, or remove the partition's directory to "
            "publish from scratch (every floor and spend cap then needs --governance-key)", code=exc.code) from None
    payload = verified.payload
    if payload.get("kind") != "ControllerBundle" or payload.get("partition") != partition:
        raise BundleError(f"the previous bundle {path} is a {payload.get('kind')} for partition "
                          f"{payload.get('partition')!r}, not the ControllerBundle of {partition!r}; remove it",
                          code="BND003")
    return payload


def build_payloads(partition: str, workloads: Iterable[CompiledWorkload], issued_at: datetime,
                   previous: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build the agent and controller bundle payloads of one partition.

    Args:
        partition: ``<region>/<cluster>``.
        workloads: the partition's compiled workloads.
        issued_at: the issue time stamped into both payloads (UTC).
        previous: the partition's previous controller payload, or None for the first publish.

    Returns:
        ``(agent_payload, controller_payload)``. The generation is kept when the source digest matches
        ``previous``, else incremented.
    """
    ws = sorted(workloads, key=lambda w: w.contract.workload)
    agent_workloads = {w.contract.ref: agent_entry(w) for w in ws}
    controller_workloads = {w.contract.ref: controller_entry(w) for w in ws}
    source = digest(controller_workloads)
    prev_gen = int(previous.get("generation", 0)) if previous else 0
    unchanged = previous is not None and previous.get("source_digest") == source
    generation = prev_gen if unchanged else prev_gen + 1
    stamp = issued_at.isoformat().replace("+00:00", "Z")
    if unchanged and previous is not None:
        stamp = str(previous.get("issued_at", stamp))
    common = {"apiVersion": API_VERSION, "partition": partition, "generation": generation,
              "issued_at": stamp, "source_digest": source}
    agent = {**common, "kind": "AgentBundle", "workloads": agent_workloads}
    controller = {**common, "kind": "ControllerBundle", "workloads": controller_workloads,
                  "governed_changes": governed_changes(previous, controller_workloads),
                  "previous_digest": previous.get("source_digest") if previous else None}
    return agent, controller


def _write_signed(path: Path, payload: dict[str, Any], key: ec.EllipticCurvePrivateKey,
                  governance_key: ec.EllipticCurvePrivateKey | None) -> None:
    raw = canonical_bytes(payload)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(raw)
    (path.with_name(path.name + SIG_SUFFIX)).write_bytes(sign_blob(raw, key) + b"\n")
    gov = path.with_name(path.name + GOVERNANCE_SIG_SUFFIX)
    if governance_key is not None and payload.get("governed_changes"):
        gov.write_bytes(sign_blob(raw, governance_key) + b"\n")
    elif gov.exists():
        gov.unlink()
    tmp.replace(path)


def publish(workloads: list[CompiledWorkload], out: Path, key: ec.EllipticCurvePrivateKey,
            issued_at: datetime, governance_key: ec.EllipticCurvePrivateKey | None = None,
            previous_root: Path | None = None) -> list[PublishedBundle]:
    """Write and sign both bundles for every partition.

    Checks governance for all partitions before writing any, so a refused compile leaves the previously
    published bundles untouched. Governed changes are computed against the previous controller bundle (from
    ``previous_root``, default ``out``) only after its signature verifies with ``key``'s public half.

    Raises:
        GovernanceError: governed fields changed and no ``governance_key`` was given.
        BundleError: a previous bundle does not verify or is not this partition's (nothing is written).
    """
    public = public_pem(key)
    governance_public = None if governance_key is None else public_pem(governance_key)
    by_partition: dict[str, list[CompiledWorkload]] = {}
    for w in workloads:
        by_partition.setdefault(w.contract.partition, []).append(w)
    planned = []
    all_changes: list[dict[str, Any]] = []
    for partition, ws in sorted(by_partition.items()):
        directory = partition_dir(out, partition)
        previous = _read_previous(partition_dir(previous_root or out, partition), partition, public,
                                  governance_public)
        agent, controller = build_payloads(partition, ws, issued_at, previous)
        unchanged = previous is not None and previous_root in (None, out) and (
            previous.get("source_digest") == controller["source_digest"])
        all_changes.extend(controller["governed_changes"])
        planned.append((partition, directory, agent, controller, len(ws), unchanged))
    if all_changes and governance_key is None:
        raise GovernanceError(all_changes)
    published = []
    for partition, directory, agent, controller, count, unchanged in planned:
        if not unchanged:  # an unchanged partition keeps its published files byte for byte
            directory.mkdir(parents=True, exist_ok=True)
            _write_signed(directory / AGENT_BUNDLE, agent, key, None)
            _write_signed(directory / CONTROLLER_BUNDLE, controller, key, governance_key)
        published.append(PublishedBundle(partition, directory, int(agent["generation"]), count,
                                         len(controller["governed_changes"]), unchanged))
    return published
