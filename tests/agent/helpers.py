"""Test helpers for the agent: signed bundles, a NATS server, small HTTP servers, agent wiring."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, parse_userdata, userdata_document
from agent.model import NodeIdentity
from contracts.canonical import canonical_bytes
from contracts.signing import KeyPair, generate_keypair, load_private_key, sign_blob

REGION = "r1"


def workload_entry(name: str, version: str = "1", budget: int = 3, signal: str = "USR1", requeue: bool = True,
                   advisory: bool = False, scheduler: str = "slurm") -> dict[str, Any]:
    return {"workload": name, "version": version, "tier": "batch-resumable", "scheduler": scheduler,
            "drain_budget_s": budget, "drain_signal": signal, "advisory_drain": advisory,
            "checkpoint_mode": "periodic-and-final", "framework": None, "checkpoint_interval_min": 30,
            "restart": "resume-from-checkpoint" if requeue else "not-restartable", "requeue": requeue,
            "max_unit_length_min": 60}


def make_bundle(keys: KeyPair, partition: str, generation: int, workloads: list[dict[str, Any]],
                issued_at: datetime | None = None, source_digest: str | None = None) -> tuple[bytes, bytes]:
    payload = {"apiVersion": "sco/v1", "kind": "AgentBundle", "partition": partition, "generation": generation,
               "issued_at": (issued_at or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
               "source_digest": source_digest or f"sha256:{generation:064x}",
               "workloads": {f"{w['workload']}@{w['version']}": w for w in workloads}}
    raw = canonical_bytes(payload)
    return raw, sign_blob(raw, load_private_key(keys.private_pem))


def write_bundle_dir(directory: Path, raw: bytes, sig: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "agent-bundle.json").write_bytes(raw)
    (directory / "agent-bundle.json.sig").write_bytes(sig + b"\n")


def node_identity(node: str = "node1", instance: str = "i-node1", scheduler: str = "slurm",
                  partition: str = "r1/slurm-batch") -> NodeIdentity:
    return NodeIdentity(region=REGION, partition=partition, instance=instance, node_name=node,
                        pool="r1-h1-gp-large-reclaimable", scheduler=scheduler)


def agent_config(tmp: Path, keys: KeyPair, node: NodeIdentity, bundle: tuple[bytes, bytes] | None,
                 nats_url: str | None = None, metadata_url: str | None = None,
                 distributor_url: str | None = None, **settings: Any) -> tuple[AgentConfig, Any, bytes]:
    tmp.mkdir(parents=True, exist_ok=True)
    raw, sig = bundle if bundle else (b"", b"")
    doc = userdata_document(node, raw, sig, [nats_url] if nats_url else [], metadata_url, distributor_url)
    if bundle is None:
        doc["bundle"] = None
    path = tmp / "userdata.json"
    path.write_text(json.dumps(doc))
    (tmp / "bundle.pub").write_bytes(keys.public_pem)
    settings.setdefault("metrics_port", 0)
    cfg = AgentConfig(userdata=path, public_key=tmp / "bundle.pub", state_dir=tmp / "state", **settings)
    return cfg, parse_userdata(path.read_bytes()), keys.public_pem


def new_keys() -> KeyPair:
    return generate_keypair()


async def ensure_stream(url: str) -> None:
    import nats
    from nats.js.api import StreamConfig

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        try:
            await js.stream_info("SCO_EVENTS")
        except Exception:
            await js.add_stream(StreamConfig(name="SCO_EVENTS", subjects=["sco.events.>"], duplicate_window=120))
    finally:
        await nc.close()


async def stream_events(url: str) -> list[dict[str, Any]]:
    """Every event in SCO_EVENTS (read with direct gets by sequence)."""
    import nats

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        info = await js.stream_info("SCO_EVENTS")
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            try:
                msg = await js.get_msg("SCO_EVENTS", seq)
            except Exception:
                continue
            out.append(json.loads(msg.data or b"{}"))
        return out
    finally:
        await nc.close()


async def wait_for(pred: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        await asyncio.sleep(interval)
    return pred()


def notice_doc(instance: str, issued: datetime | None = None, terminate_in_s: int = 120, drill: bool = False,
               notice_id: str | None = None) -> dict[str, Any]:
    from datetime import timedelta

    issued = issued or datetime.now(UTC)
    doc: dict[str, Any] = {"region": REGION, "instance_id": instance, "pool_id": "r1-h1-gp-large-reclaimable",
                           "hall": "h1", "issued_at": issued.isoformat().replace("+00:00", "Z"),
                           "terminate_at": (issued + timedelta(seconds=terminate_in_s)).isoformat()
                           .replace("+00:00", "Z"), "cause": "reclaim", "drill": drill}
    if notice_id:
        doc["notice_id"] = notice_id
    return doc
