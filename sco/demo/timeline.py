"""The live timeline's moving parts: the tick every second (fleet sync, display, dead-process check), the
controllers, and the timed events (a real Slurm reclaim, a misbehaving pool, a drill, a hall-wide reclaim, a
control-plane outage and its end), each at a fraction of ``--live``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE, CONTROLLER_BUNDLE

from .context import RunContext
from .procs import post, sco_argv
from .slurm import DEMO_JOB, slurm_job_state

__all__ = ["STEPS", "announcement", "claims", "slurm_unavailable", "start_controllers", "tick"]


def _reclaim(url: str, body: Any = None) -> Any:
    """A real reclaim, asked of the simulated region with the drill identity (the region's operator)."""
    from controllers.providers.simulated import region_token

    return post(url, body, token=region_token("drill"))


def claims(bundle: Path, units: int) -> list[dict[str, Any]]:
    """Pending work for every workload of a partition: ``units`` items of its declared unit size."""
    payload = json.loads(bundle.read_text())
    items = []
    for ref, w in sorted(payload["workloads"].items()):
        r = w["resources"]
        for i in range(units):
            items.append({"source": w["scheduler"], "item_id": f"{w['workload']}-{i}", "contract_ref": ref,
                          "vcpu": r["vcpu"], "memory_gib": r["memory_gib"], "state": "pending"})
    return items


def start_controllers(ctx: RunContext) -> None:
    """One ``sco controller run`` per partition with the default ADR-12 bounds: the controller itself tells a
    first placement (never planned, nothing held: no ramp) from a restart (two read-only cycles, then the ramp).
    Every launch carries the complete user-data: the agent bundle, the stack's relay, the region's metadata
    endpoint and a password the controller mints as the instance's own NATS user (``--agent-credentials``)."""
    for partition in ctx.partitions:
        region, cluster = partition.split("/", 1)
        bundle = ctx.bundles / region / cluster / CONTROLLER_BUNDLE
        claims_file = ctx.run_dir / f"claims-{cluster}.json"
        claims_file.write_text(json.dumps(claims(bundle, ctx.cfg.units_per_workload)))
        ctx.procs.start(f"controller-{cluster}", sco_argv(
            "controller", "run", "--partition", partition, "--bundle", str(bundle),
            "--pubkey", str(ctx.keys / "signing.pub.pem"), "--governance-key", str(ctx.keys / "governance.pub.pem"),
            "--sim-url", ctx.sim_url, "--nats", "stack",
            "--claims-file", str(claims_file), "--interval", "2", "--all-partitions", ",".join(ctx.partitions),
            "--agent-credentials", "stack", "--agent-nats-url", "stack",
            "--metadata-url", f"{ctx.sim_url}/metadata/{{instance}}"),
            env=ctx.env("controller"))


def stop_controllers(ctx: RunContext) -> None:
    """Stop every partition's controller (the agents go on without them)."""
    for partition in ctx.partitions:
        ctx.procs.stop(f"controller-{partition.split('/', 1)[1]}")


async def tick(ctx: RunContext) -> None:
    """Sync the fleet with the region and update the display and summary; raises when a service process has failed."""
    fleet = ctx.the_fleet()
    await fleet.sync()
    kinds: dict[str, int] = {}
    for a in fleet.agents.values():
        kinds[a.kind] = kinds.get(a.kind, 0) + 1
    ctx.display.fleet = kinds
    ctx.summary.fleet_peak = max(ctx.summary.fleet_peak, len(fleet.agents))
    ctx.summary.real_agents = max(ctx.summary.real_agents, kinds.get("process", 0))
    ctx.summary.userdata_booted = list(fleet.userdata_booted)
    ctx.summary.slurm_instances |= {a.instance for a in fleet.agents.values() if a.kind == "process"}
    ctx.summary.userdata_refused = list(fleet.userdata_refused)
    failed = ctx.procs.check()
    if failed:
        raise RuntimeError("; ".join(failed))
    ctx.display.refresh()


async def drill(ctx: RunContext) -> None:
    """A drill reclaim of 5 % (at least one) of the first partition's active instances; nothing when it has none."""
    from controllers.drills import DrillError, choose_victims

    instances = await asyncio.to_thread(ctx.provider.list_instances, {"partition": ctx.partitions[0]})
    try:
        victims = choose_victims(instances, ctx.partitions[0], 0.05, seed=ctx.cfg.seed)
    except DrillError:
        return
    await asyncio.to_thread(ctx.provider.reclaim, victims, drill=True)
    ctx.summary.drilled = list(victims)


async def _submit_slurm_job(ctx: RunContext, conf: str) -> str | None:
    """A job under the first requeue contract with checkpoints of the Slurm partition; its id, or None."""
    entries = json.loads((ctx.bundles / "r1" / "slurm-hpc" / AGENT_BUNDLE).read_text())["workloads"]
    ref, entry = next(((r, w) for r, w in entries.items()
                       if w["scheduler"] == "slurm" and w["requeue"] and w["checkpoint_mode"] != "none"),
                      (None, None))
    if ref is None or entry is None:
        return None
    sig = str(entry["drain_signal"])  # the job listens for its contract's drain signal
    env = {**os.environ, "SLURM_CONF": conf, "SCO_DRAIN_SIGNAL": sig,
           "SCO_DRAIN_BUDGET_S": str(entry["drain_budget_s"])}
    out = await asyncio.to_thread(subprocess.run, [
        "sbatch", "--parsable", "-p", "reclaimable", "--job-name", DEMO_JOB, "--requeue",
        f"--signal=B:{sig.removeprefix('SIG')}@60", "--open-mode=append",
        f"--comment=contract={ref}", f"--output={ctx.run_dir}/slurm-%j.out", "--wrap",
        f"exec {sys.executable} -m workload.checkpoint.slurm_batch -- sleep 900"],
        capture_output=True, text=True, env=env)
    if out.returncode != 0:
        ctx.summary.slurm_after = f"sbatch failed: {out.stderr.strip()[:120]}"
        return None
    return str(out.stdout.strip().split(";")[0])


async def reclaim_slurm_node(ctx: RunContext) -> None:
    """A real job under a contract on the real Slurm test bed, run through the requeue helper; then an
    ordinary reclaim of the instance whose real agent holds the node the job landed on."""
    real = {a.slurm_node: a for a in ctx.the_fleet().agents.values() if a.slurm_node}
    conf = ctx.slurm_conf
    if not real or conf is None:
        return
    job = await _submit_slurm_job(ctx, conf)
    if job is None:
        return
    node = state = ""
    for _ in range(40):
        state = await asyncio.to_thread(slurm_job_state, job, conf)
        node = state.split(" on ", 1)[1].split(",")[0] if state.startswith("RUNNING on ") else ""
        if node:
            break
        await asyncio.sleep(0.25)
    if node not in real:
        ctx.summary.slurm_after = f"job {job} did not start on a node with a real agent ({state})"
        return
    await asyncio.sleep(5)  # a job runs a while before its node is reclaimed (its handler is installed)
    ctx.summary.slurm_reclaimed = (node, job, real[node].instance)
    ctx.summary.mark("slurm-reclaim")
    await asyncio.to_thread(_reclaim, f"{ctx.sim_url}/v1/reclaim", {"instances": [real[node].instance], "drill": False})


async def reclaim_userdata_node(ctx: RunContext) -> None:
    """An ordinary reclaim of one node whose real sco-agent booted from the controller's user-data: its notice
    comes on the agent's own NATS subject and the metadata endpoint, the agent drains the node's pods."""
    from .fleet import USERDATA_KIND

    chosen = sorted(a.instance for a in ctx.the_fleet().agents.values() if a.kind == USERDATA_KIND)[:1]
    if chosen:
        ctx.summary.userdata_reclaimed = chosen[0]
        await asyncio.to_thread(_reclaim, f"{ctx.sim_url}/v1/reclaim", {"instances": chosen, "drill": False})


async def bad_pool(ctx: RunContext) -> None:
    """Three reclaim waves on one pool, 8 s apart: the exclusion watcher must exclude it."""
    instances = await asyncio.to_thread(ctx.provider.list_instances)
    by_pool: dict[str, list[str]] = {}
    for i in instances:
        if i.owner is not None and i.status.value == "active" and i.pool_id:
            by_pool.setdefault(i.pool_id, []).append(i.instance_id)
    if not by_pool:
        return  # nothing placed to reclaim; the summary says no pool was excluded
    pool, ids = max(by_pool.items(), key=lambda kv: (len(kv[1]), kv[0]))
    ctx.summary.bad_pool = pool
    for wave in range(3):
        if wave:
            await asyncio.sleep(8)
        await tick(ctx)
        await asyncio.to_thread(_reclaim, f"{ctx.sim_url}/v1/reclaim",
                                {"instances": ids[wave:wave + 1], "drill": False})
    ctx.summary.mark("third-wave")


async def hall(ctx: RunContext) -> None:
    """A reclaim of every instance in hall h2."""
    ctx.summary.mark("hall-reclaim")
    await asyncio.to_thread(_reclaim, f"{ctx.sim_url}/v1/halls/h2/reclaim")


async def outage_start(ctx: RunContext) -> None:
    """Stop the controllers and reclaim hall h3 meanwhile: the agents must drain without them."""
    ctx.summary.mark("outage-start")
    stop_controllers(ctx)
    await asyncio.to_thread(_reclaim, f"{ctx.sim_url}/v1/halls/h3/reclaim")  # reclaims go on meanwhile


async def outage_end(ctx: RunContext) -> None:
    """Start the controllers again, as a restart (read-only cycles first, then the ramp)."""
    ctx.summary.mark("outage-end")
    start_controllers(ctx)  # a restart: two read-only cycles, then ≤ 5 % per 5 min (ADR-12)


def slurm_unavailable(ctx: RunContext) -> str | None:
    """Why the real Slurm step cannot run in this demo (None: it can): it needs the test bed and a real agent."""
    if not ctx.cfg.slurm:
        return "sco demo --no-slurm"
    if ctx.slurm_conf is None:
        return "no Slurm test bed is up: deploy/testbed/slurm/up brings one"
    if not any(a.slurm_node for a in ctx.the_fleet().agents.values()):
        return "no real sco-agent holds a Slurm test-bed node"
    return None


def always(_: RunContext) -> str | None:
    """No reason to skip: for the steps that can run in any demo."""
    return None


Step = tuple[float, str, Callable[[RunContext], Awaitable[None]], Callable[[RunContext], str | None]]

# (fraction of --live, what the display shows, what happens, why it cannot happen here: None when it can). A step
# that cannot run is announced as skipped, with the reason, instead of its line.
STEPS: tuple[Step, ...] = (
    (0.08, "a reclaim of a node whose real sco-agent booted from the controller's user-data", reclaim_userdata_node,
     always),
    (0.15, "a real Slurm job, then a reclaim of its node: the real agent drains it and Slurm requeues the job",
     reclaim_slurm_node, slurm_unavailable),
    (0.25, "a misbehaving pool: three reclaim waves in 16 s", bad_pool, always),
    (0.35, "a drill: 5 % of a partition reclaimed with the drill flag", drill, always),
    (0.45, "hall-wide reclaim of h2: floor restoration and capped fallback", hall, always),
    (0.65, "control-plane outage: both controllers stopped, reclaims go on", outage_start, always),
    (0.85, "control plane back: read-only cycles, then replacements", outage_end, always),
)


def announcement(ctx: RunContext, label: str, unavailable: Callable[[RunContext], str | None]) -> str | None:
    """The line a step is shown with: its label, or ``skipped: <label> — <why>``; None when it runs (the label)."""
    why = unavailable(ctx)
    return None if why is None else f"skipped: {label.split(':')[0]} ({why})"
