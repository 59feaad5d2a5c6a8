"""``sco demo``: the whole platform on embedded defaults, in a few minutes on a 2-core machine.

Processes (each the ordinary command an operator runs): the embedded stack (``sco up``), the simulated region
on the wall clock at compressed reclaim rates (``sco sim region serve``), the event ingest and the outbox relay,
and one controller per partition (``sco controller run``). In this process: the node fleet (``fleet``: real
``sco-agent`` processes booted from the controller's rendered user-data on a handful of simulated Kubernetes
nodes and on the real Slurm test bed's nodes when it is up, in-process agents on simulated nodes for the rest)
and the progress display. The timeline: placement, ordinary reclaims, a drill, a hall-wide reclaim, a
control-plane outage (both controllers stopped; the agents drain exactly as before), recovery; then
the analytics (Dagster assets and dbt models), the reports and the summary table.

``run_demo`` is a list of named phases (``PHASES``), each a function of the shared ``RunContext``, run in order
by ``drive``, which shows each phase's name once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE

from .context import DemoConfig, RunContext, Urls
from .display import Display
from .procs import Procs, sco_argv, wait_http
from .production import agent_records
from .slurm import cancel_demo_jobs, slurm_job_state, slurm_testbed
from .timeline import STEPS, announcement, start_controllers, stop_controllers, tick

__all__ = ["PHASES", "DemoConfig", "Phase", "RunContext", "drive", "region_settings", "run_demo"]


@dataclass(frozen=True)
class Phase:
    name: str                                       # what the display shows while it runs
    run: Callable[[RunContext], Awaitable[None]]


async def start_stack(ctx: RunContext) -> None:
    """A fresh embedded stack (the last run's removed), migrated, its URLs kept in the context."""
    from sco.stack import bootstrap, manager
    from stores.config import load_urls

    t = time.monotonic()
    # every run starts from nothing: a new simulated region must not meet the last run's fleet state
    # (the controller would rightly fail static on instances that vanished, ADR-12)
    stack_home = ctx.home / "stack"
    if stack_home.exists():
        with contextlib.suppress(Exception):
            await asyncio.to_thread(manager.down, stack_home)
        shutil.rmtree(stack_home, ignore_errors=True)
    os.environ["SCO_HOME"] = str(stack_home)
    for var in ("SCO_POSTGRES_URL", "SCO_NATS_URL", "SCO_CLICKHOUSE_URL"):
        # the demo runs on embedded defaults: stores given by URL (production's way) would carry one
        # run's fleet state into the next
        os.environ.pop(var, None)
    await asyncio.to_thread(manager.up, stack_home, fast=True)
    found = load_urls(stack_home)
    if not (found.postgres and found.nats and found.clickhouse):
        raise RuntimeError(f"the stack in {stack_home} did not come up: {found}")
    ctx.urls = Urls(found.postgres, found.nats, found.clickhouse)
    await asyncio.to_thread(bootstrap.prepare, found)  # migrations and streams, idempotent
    ctx.summary.timing("stack up", time.monotonic() - t)


async def sign_contracts(ctx: RunContext) -> None:
    """Compile the example contracts and publish them signed with new keys, so each partition has its bundles."""
    from contracts.bundle import publish
    from contracts.compiler import check_repo
    from contracts.signing import load_private_key
    from sco.commands.keys import init_keys

    result = check_repo(ctx.cfg.contracts)
    if result.errors:
        raise RuntimeError(f"the example contracts do not compile: {result.errors[0].render()}")
    ctx.keys = ctx.home / "keys"
    init_keys(ctx.keys)
    ctx.bundles = ctx.run_dir / "bundles"
    published = publish(result.workloads, ctx.bundles, load_private_key(ctx.keys / "signing.key.pem"),
                        datetime.now(UTC), load_private_key(ctx.keys / "governance.key.pem"))
    ctx.partitions = [b.partition for b in published]
    ctx.summary.workload_partition = {w.contract.workload: w.contract.partition for w in result.workloads}
    ctx.summary.contracts = agent_records(sorted(ctx.bundles.glob(f"*/*/{AGENT_BUNDLE}")))
    ctx.summary.tolerances = {w.contract.workload: float(w.contract.max_interruption_rate_pct_h)
                              for w in result.workloads}


def region_settings(cfg: DemoConfig) -> dict[str, str]:
    """The simulated region's settings for the demo (``sco sim region serve --set KEY=VALUE``): the compressed
    reclaim rate, the pinned hour of day (so two runs see the same prices and demand whenever they run), no
    random hall reclaims (the timeline makes its own), short hall outages, no other tenants."""
    return {"reclaim_rate_pct_h": f"{cfg.reclaim_rate_pct_h:g}", "start_hour": f"{cfg.start_hour:g}",
            "hall_reclaims_per_30d": "0", "hall_outage_s": "150", "background": "false"}


async def start_services(ctx: RunContext) -> None:
    """Start the simulated region, its pool history, the ingest, the outbox relay and the exclusion watcher, and feed
    every event to the display and the summary."""
    from controllers.providers import SimulatedProvider
    from sco.stack.services import free_port
    from stores import nats as nats_store

    cfg, urls, procs = ctx.cfg, ctx.urls, ctx.procs
    sim_port = free_port()
    ctx.sim_url = f"http://127.0.0.1:{sim_port}"
    # each process gets its own credentials through its environment (ctx.env), never on its command line
    settings = [arg for key, value in region_settings(cfg).items() for arg in ("--set", f"{key}={value}")]
    procs.start("simregion", sco_argv("sim", "region", "serve", "--port", str(sim_port), "--seed", str(cfg.seed),
                                      *settings), env=ctx.env("region"))
    # 14 days of the region's pool history, so the rankings and groups have something to learn from
    procs.start("history", sco_argv("sim", "history", "--days", "14", "--seed", str(cfg.seed)),
                env={"SCO_CLICKHOUSE_URL": urls.clickhouse})
    procs.start("ingest", sco_argv("ingest"), env=ctx.env("ingest"))
    procs.start("outbox", sco_argv("outbox", "relay"), env=ctx.env("relay"))
    # the region's streaming exclusion watcher; waves closer than 5 s are one wave (compressed from 60 s)
    procs.start("exclusions", sco_argv("controller", "watch-exclusions", "--region", "r1", "--wave-gap-s", "5"),
                env=ctx.env("controller"))
    await asyncio.to_thread(wait_http, f"{ctx.sim_url}/healthz", 30)
    ctx.provider = SimulatedProvider(ctx.sim_url, region="r1")
    ctx.nc = await nats_store.connect(ctx.env("watcher")["SCO_NATS_URL"], name="sco-demo")

    async def on_event(msg: Any) -> None:
        ctx.display.on_event(msg.data)
        ctx.summary.on_event(msg.data)

    await ctx.nc.subscribe("sco.events.>", cb=on_event)


async def place(ctx: RunContext) -> None:
    """Controllers and fleet up; the timeline starts once placement has settled: the fleet has stopped growing
    for 6 s (at most 120 s)."""
    from .fleet import Fleet

    start_controllers(ctx)  # a first placement: the controller applies no recovery ramp (docs/demo.md)
    ctx.slurm_conf, ctx.slurm_nodes = slurm_testbed() if ctx.cfg.slurm else (None, [])
    if ctx.slurm_conf:
        await asyncio.to_thread(cancel_demo_jobs, ctx.slurm_conf)
    from contracts.provider import ProviderError
    from sco.stack.manager import mint_agent

    from .userdata_agents import UserDataAgents, launch_password

    stack_home = ctx.home / "stack"
    provider = ctx.provider
    # real agents booted from the user-data the controllers sent with each launch, read back from the region
    userdata = UserDataAgents(provider, ctx.bundles, ctx.keys / "signing.pub.pem", ctx.run_dir / "userdata-nodes",
                              seed=ctx.cfg.seed) if ctx.cfg.userdata_agents else None

    def mint(region: str, instance: str) -> str:
        """The instance's own NATS URL, with the password of its launch's user-data: the credential the
        controller mints (registered here first when the fleet sees the instance before the controller is done)."""
        try:
            sent = provider.user_data(instance)
        except ProviderError:  # gone meanwhile: its agent is stopped at the next sync
            sent = None
        return mint_agent(region, instance, stack_home, password=launch_password(sent))

    ctx.fleet = Fleet(provider, ctx.bundles, ctx.keys / "signing.pub.pem", ctx.urls.nats, ctx.sim_url,
                      ctx.run_dir / "nodes", slurm_nodes=ctx.slurm_nodes, slurm_conf=ctx.slurm_conf,
                      seed=ctx.cfg.seed, mint=mint, userdata=userdata, userdata_max=ctx.cfg.userdata_agents)
    ctx.summary.userdata_agents_max = ctx.cfg.userdata_agents
    ctx.summary.real_agents_possible = len(ctx.slurm_nodes)
    ctx.live_started = time.monotonic()
    settled_at, size = time.monotonic(), -1
    while ctx.elapsed() < 120:
        await tick(ctx)
        if len(ctx.fleet.agents) != size or size == 0:
            settled_at, size = time.monotonic(), len(ctx.fleet.agents)
        elif time.monotonic() - settled_at >= 6:
            break
        await asyncio.sleep(1.0)
    ctx.summary.placed_in_s = ctx.elapsed()
    ctx.live_started = time.monotonic()


async def run_timeline(ctx: RunContext) -> None:
    """One tick a second for ``--live`` seconds; each timed step when its moment comes, shown as it starts."""
    steps = [(fraction * ctx.cfg.live_s, label, action, unavailable) for fraction, label, action, unavailable in STEPS]
    while ctx.elapsed() < ctx.cfg.live_s:
        await tick(ctx)
        while steps and ctx.elapsed() >= steps[0][0]:
            _, label, action, unavailable = steps.pop(0)
            skipped = announcement(ctx, label, unavailable)
            ctx.display.set_phase(skipped or label)
            if skipped is None:
                await action(ctx)
        await asyncio.sleep(1.0)


async def stop_fleet(ctx: RunContext) -> None:
    """Stop the agents and the controllers and give the last events time to land."""
    summary = ctx.summary
    if summary.slurm_reclaimed:
        summary.slurm_after = await asyncio.to_thread(slurm_job_state, summary.slurm_reclaimed[1], ctx.slurm_conf)
    await ctx.the_fleet().close()
    if ctx.slurm_conf:
        await asyncio.to_thread(cancel_demo_jobs, ctx.slurm_conf)
    stop_controllers(ctx)
    await asyncio.sleep(3)
    summary.live_s = ctx.cfg.live_s


async def wait_history(ctx: RunContext) -> None:
    """Wait for the pool history to be written, then stop every service but the simulated region, keeping
    their CPU time for the footprint."""
    procs = ctx.procs
    await asyncio.to_thread(procs.wait, "history", 300)
    procs.procs.pop("history", None)
    for name in list(procs.procs):
        if name != "simregion":
            procs.stop(name)  # ingest, relay and watcher: counted in the orchestrator's footprint
    own = os.times()
    ctx.summary.orchestrator_cpu_s = {**procs.cpu_s, "demo process (agents, display)": own.user + own.system}


async def analytics(ctx: RunContext) -> None:
    """Materialise the Dagster assets and dbt models and write the reports, on a worker thread."""
    from .analytics import materialise_and_report

    await asyncio.to_thread(materialise_and_report, ctx.urls, ctx.sim_url, ctx.cfg, ctx.summary, ctx.run_dir,
                            ctx.display.set_phase)


PHASES: tuple[Phase, ...] = (
    Phase("starting a fresh embedded stack (PostgreSQL, NATS JetStream, ClickHouse)", start_stack),
    Phase("compiling and signing the example contracts", sign_contracts),
    Phase("starting the simulated region, the ingest and the outbox relay", start_services),
    Phase("controllers placing the claims", place),
    Phase("running through ordinary reclaims", run_timeline),
    Phase("stopping the fleet and letting the events land", stop_fleet),
    Phase("waiting for the pool history to be written", wait_history),
    Phase("analytics: ingest, Dagster assets and dbt models", analytics),
)


async def drive(phases: Sequence[Phase], ctx: RunContext) -> None:
    """Run the phases in order, showing each one's name once as it starts."""
    beat = asyncio.create_task(_keepalive(ctx))
    try:
        for phase in phases:
            ctx.display.set_phase(phase.name)
            await phase.run(ctx)
    finally:
        beat.cancel()


async def _keepalive(ctx: RunContext) -> None:
    """A line whenever a phase has been quiet for 10 s (without a terminal): no silent stretch over 15 s."""
    while True:
        await asyncio.sleep(1.0)
        ctx.display.keepalive()


async def _close(ctx: RunContext) -> None:
    if ctx.fleet is not None:
        with contextlib.suppress(Exception):
            await ctx.fleet.close()
    if ctx.nc is not None:
        with contextlib.suppress(Exception):
            await ctx.nc.close()
    ctx.procs.stop_all()
    ctx.display.stop()


async def run_demo(cfg: DemoConfig) -> int:
    """Run every phase, then print the summary; a failed or interrupted run stops its stack (a complete one
    leaves it up to explore)."""
    from .summary import Summary

    home = cfg.home.resolve()
    run_dir = home / "run" / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(cfg=cfg, home=home, run_dir=run_dir, procs=Procs(logs=run_dir), display=Display(),
                     summary=Summary(started=datetime.now(UTC), start_hour=cfg.start_hour,
                                     reclaim_rate_pct_h=cfg.reclaim_rate_pct_h,
                                     production_rate_pct_h=cfg.production_rate_pct_h))
    ctx.display.start()
    completed = False
    try:
        await drive(PHASES, ctx)
        completed = True
    finally:
        await _close(ctx)
        if not completed:  # a failed or interrupted run stops its stack; a complete one leaves it up (docs/demo.md)
            from sco.stack import manager

            with contextlib.suppress(Exception):
                manager.down(home / "stack")
    print()
    print(ctx.summary.render())
    print(f"\nReports: {cfg.reports.resolve()}\nRun directory (logs, bundles): {run_dir}")
    return 0
