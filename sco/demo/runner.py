"""``sco demo``: the whole platform on embedded defaults, in a few minutes on a 2-core machine.

Processes (each the ordinary command an operator runs): the embedded stack (``sco up``), the simulated region
on the wall clock at compressed reclaim rates (``sco sim region serve``), the event ingest and the outbox relay,
and one controller per partition (``sco controller run``). In this process: the node fleet (``fleet``: real
``sco-agent`` processes on the real Slurm test bed's nodes when it is up, in-process agents on simulated nodes
for the rest) and the progress display. The timeline: placement, ordinary reclaims, a drill, a hall-wide
reclaim, a control-plane outage (both controllers stopped; the agents drain exactly as before), recovery;
then the analytics (Dagster assets and dbt models), the reports and the summary table.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .display import Display

__all__ = ["DemoConfig", "run_demo"]

REPO = Path(__file__).resolve().parents[2]
DEMO_JOB = "sco-demo"  # the demo's Slurm jobs, cancelled at the start and the end of every run


@dataclass(frozen=True)
class DemoConfig:
    home: Path = Path(".sco/demo")
    contracts: Path = REPO / "deploy" / "contracts"
    reports: Path = Path("demo-reports")
    live_s: float = 240.0                 # the live part of the timeline
    reclaim_rate_pct_h: float = 150.0     # compressed: ~4 %/h in production
    units_per_workload: int = 6
    seed: int = 1
    slurm: bool = True                    # use the real Slurm test bed when it is up


@dataclass(frozen=True)
class _Urls:
    postgres: str
    nats: str
    clickhouse: str


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, from /proc (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn``: the child gets SIGTERM when the demo dies, even by SIGKILL (Linux ``PR_SET_PDEATHSIG``).
    Bound here, in the parent: the child only makes the call between fork and exec."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the demo's own stop is the only one
        return None
    parent, term = os.getpid(), int(signal.SIGTERM)

    def arm() -> None:
        prctl(1, term)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the demo died before the call
            os.kill(os.getpid(), term)

    return arm


@dataclass
class _Procs:
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: Path = Path(".")
    cpu_s: dict[str, float] = field(default_factory=dict)  # what stopped processes used, by name prefix

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                start_new_session=True, preexec_fn=_die_with_parent())
        self.procs[name] = proc
        return proc

    def stop(self, name: str, timeout: float = 10.0) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        key = name.split("-", 1)[0]
        self.cpu_s[key] = self.cpu_s.get(key, 0.0) + _cpu_seconds(proc.pid)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def check(self) -> list[str]:
        """Processes that died; a one-shot job (``history``) that finished cleanly is not a failure."""
        return [f"{n} exited with {p.returncode} (log: {self.logs / (n + '.log')})"
                for n, p in self.procs.items() if p.poll() is not None and not (n == "history" and p.returncode == 0)]

    def wait(self, name: str, timeout: float) -> int | None:
        proc = self.procs.get(name)
        if proc is None:
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def _sco(*args: str) -> list[str]:
    return [sys.executable, "-m", "sco", *args]


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def _post(url: str, body: Any = None) -> Any:
    data = json.dumps(body if body is not None else {}).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"null")


def _claims(bundle: Path, units: int) -> list[dict[str, Any]]:
    """Pending work for every workload of a partition: ``units`` items of its declared unit size."""
    payload = json.loads(bundle.read_text())
    items = []
    for ref, w in sorted(payload["workloads"].items()):
        r = w["resources"]
        for i in range(units):
            items.append({"source": w["scheduler"], "item_id": f"{w['workload']}-{i}", "contract_ref": ref,
                          "vcpu": r["vcpu"], "memory_gib": r["memory_gib"], "state": "pending"})
    return items


async def _every(seconds: float, until: Callable[[], bool], fn: Callable[[], Awaitable[None]]) -> None:
    while not until():
        await fn()
        await asyncio.sleep(seconds)


def _cancel_demo_jobs(conf: str) -> None:
    """Cancel the demo's jobs until none is left: a job mid-requeue survives the first scancel."""
    env = {**os.environ, "SLURM_CONF": conf}
    for _ in range(5):
        subprocess.run(["scancel", "--name", DEMO_JOB], capture_output=True, timeout=10, env=env)
        left = subprocess.run(["squeue", "-h", "-n", DEMO_JOB, "-t", "PD,R,CG,RQ,RH,S", "-o", "%i"],
                              capture_output=True, text=True, timeout=10, env=env).stdout.split()
        if not left:
            return
        time.sleep(1.0)


def _slurm_job_state(job: str, conf: str | None) -> str:
    """Where the job runs now and how often it was requeued (``scontrol show job``)."""
    out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True, timeout=10,
                         env={**os.environ, "SLURM_CONF": conf or ""}).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return f"{fields.get('JobState', '?')} on {fields.get('NodeList', '?')}, restarts {fields.get('Restarts', '?')}"


def _slurm_testbed() -> tuple[str | None, list[str]]:
    conf = os.environ.get("SLURM_CONF") or "/tmp/sco-testbed/slurm/slurm.conf"
    if not Path(conf).exists() or shutil.which("sinfo") is None:
        return None, []
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-p", "reclaimable", "-o", "%N"], capture_output=True, text=True,
                             timeout=5, env={**os.environ, "SLURM_CONF": conf}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None, []
    nodes = [n for n in ("node1", "node2", "node3") if n in out.split()]
    return (conf, nodes) if nodes else (None, [])


async def run_demo(cfg: DemoConfig) -> int:
    from contracts.bundle import publish
    from contracts.compiler import check_repo
    from contracts.signing import load_private_key
    from controllers.providers import SimulatedProvider
    from sco.commands.keys import init_keys
    from sco.stack import bootstrap, manager
    from sco.stack.services import free_port
    from stores import nats as nats_store
    from stores.config import load_urls

    from .fleet import Fleet
    from .summary import Summary

    home = cfg.home.resolve()
    run_dir = home / "run" / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    procs = _Procs(logs=run_dir)
    display = Display()
    summary = Summary(started=datetime.now(UTC))
    display.start()
    fleet: Fleet | None = None
    nc: Any = None
    completed = False
    try:
        display.set_phase("starting a fresh embedded stack (PostgreSQL, NATS JetStream, ClickHouse)")
        t = time.monotonic()
        # every run starts from nothing: a new simulated region must not meet the last run's fleet state
        # (the controller would rightly fail static on instances that vanished, ADR-12)
        stack_home = home / "stack"
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
        urls = _Urls(found.postgres, found.nats, found.clickhouse)
        await asyncio.to_thread(bootstrap.prepare, found)  # migrations and streams, idempotent
        summary.timing("stack up", time.monotonic() - t)

        display.set_phase("compiling and signing the example contracts")
        result = check_repo(cfg.contracts)
        if result.errors:
            raise RuntimeError(f"the example contracts do not compile: {result.errors[0].render()}")
        keys = home / "keys"
        init_keys(keys)
        bundles = run_dir / "bundles"
        published = publish(result.workloads, bundles, load_private_key(keys / "signing.key.pem"), datetime.now(UTC),
                            load_private_key(keys / "governance.key.pem"))
        partitions = [b.partition for b in published]
        summary.workload_partition = {w.contract.workload: w.contract.partition for w in result.workloads}

        display.set_phase("starting the simulated region, the ingest and the outbox relay")
        sim_port = free_port()
        sim_url = f"http://127.0.0.1:{sim_port}"
        procs.start("simregion", _sco("sim", "region", "serve", "--port", str(sim_port), "--nats", urls.nats,
                                      "--seed", str(cfg.seed),
                                      "--set", f"reclaim_rate_pct_h={cfg.reclaim_rate_pct_h}",
                                      "--set", "hall_reclaims_per_30d=0", "--set", "hall_outage_s=150",
                                      "--set", "background=false"))
        # 14 days of the region's pool history, so the rankings and groups have something to learn from
        procs.start("history", _sco("sim", "history", "--days", "14", "--seed", str(cfg.seed),
                                    "--clickhouse", urls.clickhouse))
        procs.start("ingest", _sco("ingest", "--nats", urls.nats, "--clickhouse", urls.clickhouse))
        procs.start("outbox", _sco("outbox", "relay", "--postgres", urls.postgres, "--nats", urls.nats,
                                   "--clickhouse", urls.clickhouse))
        # the region's streaming exclusion watcher; waves closer than 5 s are one wave (compressed from 60 s)
        procs.start("exclusions", _sco("controller", "watch-exclusions", "--region", "r1", "--nats", urls.nats,
                                       "--postgres", urls.postgres, "--wave-gap-s", "5"))
        await asyncio.to_thread(_wait_http, f"{sim_url}/healthz", 30)
        provider = SimulatedProvider(sim_url, region="r1")

        nc = await nats_store.connect(urls.nats, name="sco-demo")

        async def on_event(msg: Any) -> None:
            display.on_event(msg.data)
            summary.on_event(msg.data)

        await nc.subscribe("sco.events.>", cb=on_event)

        def start_controllers(recovery_share: str) -> None:
            for partition in partitions:
                region, cluster = partition.split("/", 1)
                bundle = bundles / region / cluster / "controller-bundle.json"
                claims = run_dir / f"claims-{cluster}.json"
                claims.write_text(json.dumps(_claims(bundle, cfg.units_per_workload)))
                procs.start(f"controller-{cluster}", _sco(
                    "controller", "run", "--partition", partition, "--bundle", str(bundle),
                    "--pubkey", str(keys / "signing.pub.pem"), "--governance-key", str(keys / "governance.pub.pem"),
                    "--sim-url", sim_url, "--postgres", urls.postgres, "--nats", urls.nats,
                    "--claims-file", str(claims), "--interval", "2", "--all-partitions", ",".join(partitions),
                    "--recovery-share", recovery_share))

        display.set_phase("controllers placing the claims")
        start_controllers("1.0")  # a cold start: nothing to catch up on (see docs/demo.md)
        slurm_conf, slurm_nodes = _slurm_testbed() if cfg.slurm else (None, [])
        if slurm_conf:
            await asyncio.to_thread(_cancel_demo_jobs, slurm_conf)
        fleet = Fleet(provider, bundles, keys / "signing.pub.pem", urls.nats, sim_url, run_dir / "nodes",
                      slurm_nodes=slurm_nodes, slurm_conf=slurm_conf, seed=cfg.seed)
        summary.real_agents_possible = len(slurm_nodes)
        live_started = time.monotonic()

        def elapsed() -> float:
            return time.monotonic() - live_started

        async def tick() -> None:
            assert fleet is not None
            await fleet.sync()
            kinds: dict[str, int] = {}
            for a in fleet.agents.values():
                kinds[a.kind] = kinds.get(a.kind, 0) + 1
            display.fleet = kinds
            summary.fleet_peak = max(summary.fleet_peak, len(fleet.agents))
            summary.real_agents = max(summary.real_agents, kinds.get("process", 0))
            failed = procs.check()
            if failed:
                raise RuntimeError("; ".join(failed))
            display.refresh()

        steps: list[tuple[float, str, Callable[[], Awaitable[None]]]] = []

        async def drill() -> None:
            from controllers.drills import DrillError, choose_victims

            instances = await asyncio.to_thread(provider.list_instances, {"partition": partitions[0]})
            try:
                victims = choose_victims(instances, partitions[0], 0.05, seed=cfg.seed)
            except DrillError:
                return
            await asyncio.to_thread(provider.reclaim, victims, drill=True)
            summary.drilled = list(victims)

        async def reclaim_slurm_node() -> None:
            """A real job under a contract on the real Slurm test bed, run through the requeue helper; then an
            ordinary reclaim of the instance whose real agent holds the node the job landed on."""
            assert fleet is not None
            real = {a.slurm_node: a for a in fleet.agents.values() if a.slurm_node}
            if not real or slurm_conf is None:
                return
            entries = json.loads((bundles / "r1" / "slurm-hpc" / "agent-bundle.json").read_text())["workloads"]
            ref, entry = next(((r, w) for r, w in entries.items()
                               if w["scheduler"] == "slurm" and w["requeue"] and w["checkpoint_mode"] != "none"),
                              (None, None))
            if ref is None or entry is None:
                return
            sig = str(entry["drain_signal"])  # the job listens for its contract's drain signal
            env = {**os.environ, "SLURM_CONF": slurm_conf, "SCO_DRAIN_SIGNAL": sig,
                   "SCO_DRAIN_BUDGET_S": str(entry["drain_budget_s"])}
            out = await asyncio.to_thread(subprocess.run, [
                "sbatch", "--parsable", "-p", "reclaimable", "--job-name", DEMO_JOB, "--requeue",
                f"--signal=B:{sig.removeprefix('SIG')}@60", "--open-mode=append",
                f"--comment=contract={ref}", f"--output={run_dir}/slurm-%j.out", "--wrap",
                f"exec {sys.executable} -m workload.checkpoint.slurm_batch -- sleep 900"],
                capture_output=True, text=True, env=env)
            if out.returncode != 0:
                summary.slurm_after = f"sbatch failed: {out.stderr.strip()[:120]}"
                return
            job = out.stdout.strip().split(";")[0]
            node = ""
            for _ in range(40):
                state = await asyncio.to_thread(_slurm_job_state, job, slurm_conf)
                node = state.split(" on ", 1)[1].split(",")[0] if state.startswith("RUNNING on ") else ""
                if node:
                    break
                await asyncio.sleep(0.25)
            if node not in real:
                summary.slurm_after = f"job {job} did not start on a node with a real agent ({state})"
                return
            await asyncio.sleep(5)  # a job runs a while before its node is reclaimed (its handler is installed)
            summary.slurm_reclaimed = (node, job, real[node].instance)
            summary.mark("slurm-reclaim")
            await asyncio.to_thread(_post, f"{sim_url}/v1/reclaim", {"instances": [real[node].instance],
                                                                       "drill": False})

        async def bad_pool() -> None:
            """Three reclaim waves on one pool, 8 s apart: the exclusion watcher must exclude it."""
            instances = await asyncio.to_thread(provider.list_instances)
            by_pool: dict[str, list[str]] = {}
            for i in instances:
                if i.owner is not None and i.status.value == "active" and i.pool_id:
                    by_pool.setdefault(i.pool_id, []).append(i.instance_id)
            if not by_pool:
                return  # nothing placed to reclaim; the summary says no pool was excluded
            pool, ids = max(by_pool.items(), key=lambda kv: (len(kv[1]), kv[0]))
            summary.bad_pool = pool
            for wave in range(3):
                if wave:
                    await asyncio.sleep(8)
                await tick()
                await asyncio.to_thread(_post, f"{sim_url}/v1/reclaim",
                                        {"instances": ids[wave:wave + 1], "drill": False})
            summary.mark("third-wave")

        async def hall() -> None:
            summary.mark("hall-reclaim")
            await asyncio.to_thread(_post, f"{sim_url}/v1/halls/h2/reclaim")

        async def outage_start() -> None:
            summary.mark("outage-start")
            for partition in partitions:
                procs.stop(f"controller-{partition.split('/', 1)[1]}")
            await asyncio.to_thread(_post, f"{sim_url}/v1/halls/h3/reclaim")  # reclaims go on meanwhile

        async def outage_end() -> None:
            summary.mark("outage-end")
            start_controllers("0.05")  # a restart: two read-only cycles, then ≤ 5 % per 5 min (ADR-12)

        steps = [(0.15 * cfg.live_s, "a real Slurm job, then a reclaim of its node: the real agent drains it and "
                 "Slurm requeues the job", reclaim_slurm_node),
                 (0.25 * cfg.live_s, "a misbehaving pool: three reclaim waves in 16 s", bad_pool),
                 (0.35 * cfg.live_s, "a drill: 5 % of a partition reclaimed with the drill flag", drill),
                 (0.45 * cfg.live_s, "hall-wide reclaim of h2: floor restoration and capped fallback", hall),
                 (0.65 * cfg.live_s, "control-plane outage: both controllers stopped, reclaims go on", outage_start),
                 (0.85 * cfg.live_s, "control plane back: read-only cycles, then replacements", outage_end)]
        # the timeline starts once placement has settled: the fleet has stopped growing for 6 s (at most 120 s)
        settled_at, size = time.monotonic(), -1
        while time.monotonic() - live_started < 120:
            await tick()
            assert fleet is not None
            if len(fleet.agents) != size or size == 0:
                settled_at, size = time.monotonic(), len(fleet.agents)
            elif time.monotonic() - settled_at >= 6:
                break
            await asyncio.sleep(1.0)
        summary.placed_in_s = time.monotonic() - live_started
        live_started = time.monotonic()
        display.set_phase("running through ordinary reclaims")
        while elapsed() < cfg.live_s:
            await tick()
            while steps and elapsed() >= steps[0][0]:
                _, label, action = steps.pop(0)
                display.set_phase(label)
                await action()
            await asyncio.sleep(1.0)

        display.set_phase("stopping the fleet and letting the events land")
        if summary.slurm_reclaimed:
            summary.slurm_after = await asyncio.to_thread(_slurm_job_state, summary.slurm_reclaimed[1], slurm_conf)
        await fleet.close()
        if slurm_conf:
            await asyncio.to_thread(_cancel_demo_jobs, slurm_conf)
        for partition in partitions:
            procs.stop(f"controller-{partition.split('/', 1)[1]}")
        await asyncio.sleep(3)
        summary.live_s = cfg.live_s

        display.set_phase("waiting for the pool history to be written")
        await asyncio.to_thread(procs.wait, "history", 300)
        procs.procs.pop("history", None)
        for name in list(procs.procs):
            if name != "simregion":
                procs.stop(name)  # ingest, relay and watcher: counted in the orchestrator's footprint
        own = os.times()
        summary.orchestrator_cpu_s = {**procs.cpu_s, "demo process (agents, display)": own.user + own.system}
        display.set_phase("analytics: ingest, Dagster assets and dbt models")
        from .analytics import materialise_and_report

        await asyncio.to_thread(materialise_and_report, urls, sim_url, cfg, summary, run_dir, display.set_phase)
        completed = True
    finally:
        if fleet is not None:
            with contextlib.suppress(Exception):
                await fleet.close()
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()
        procs.stop_all()
        if not completed:  # a failed or interrupted run stops its stack; a complete one leaves it up (docs/demo.md)
            with contextlib.suppress(Exception):
                manager.down(home / "stack")
        display.stop()
    print()
    print(summary.render())
    print(f"\nReports: {cfg.reports.resolve()}   run directory (logs, bundles): {run_dir}")
    return 0
