"""`sco demo` end to end, run ONCE for the module (a full run takes about a minute and a half), with store URLs in
the environment that it must ignore: every process comes up, the timeline runs, the summary has a measured
figure and a verdict for each quality row the demo exercises, the rows the demo can meet say PASS, drains
continue while both controllers are down, and the reports are written. Then a short check without a second
full run: the next run stops the stack this one left up and starts an empty one (running the demo twice works).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sco.stack import manager
from sco.stack.services import pid_alive
from stores.config import ENV_VARS, load_urls

# its own embedded stack, in a child process
pytestmark = [pytest.mark.slow, pytest.mark.services, pytest.mark.xdist_group("slurm-bed")]

ROWS = ("Notice to drain signal", "Placement decision", "Ranking refresh", "Exclusion", "Replacement",
        "Guaranteed floor", "Drill (ADR-33)", "Agents from user-data", "Drain overruns",
        "Drains without a control plane", "Fallback / shortfall", "Wasted work", "Net saving", "Net saving at 4 %/h",
        "Orchestrator cost")
# the rows the demo meets at its compressed rate; the others are explained in docs/demo.md ("Verdicts"). The
# notice-to-drain latency (≤ 2 s p99) is measured and judged by the demo but not asserted here: it is wall-clock
# time across NATS and in-process agents, and a loaded 2-core CI machine misses it (p50 2.7 s, p99 2.8 s in the
# clean-clone suite of 7 Dec 2026, on a machine ~3x slower than the one before) — ``bench.agent_notice_latency``
# is its measurement
MUST_PASS = ("Placement decision", "Ranking refresh", "Exclusion", "Replacement",
             "Guaranteed floor", "Drill (ADR-33)", "Agents from user-data", "Drain overruns",
             "Drains without a control plane", "Orchestrator cost")


@dataclass(frozen=True)
class DemoRun:
    home: Path
    reports: Path
    stdout: str
    table: str

    def cells(self, quality: str) -> dict[str, str]:
        """The row's cells by column (quality, target, measured, verdict), each cell's wrapped lines joined."""
        lines = self.table.split("\n\nVerdicts:")[0].splitlines()
        starts = [lines[0].index(name) for name in ("quality", "target", "measured", "verdict")]
        first = next((n for n, ln in enumerate(lines) if ln.startswith(quality + " ")), None)
        assert first is not None, f"summary row {quality!r} missing:\n{self.table}"
        end = next((n for n in range(first + 1, len(lines)) if lines[n][:1].strip()), len(lines))
        bounds = list(zip(starts, [*starts[1:], None], strict=True))
        return {name: " ".join(" ".join(ln[a:b] for ln in lines[first:end]).split())
                for name, (a, b) in zip(("quality", "target", "measured", "verdict"), bounds, strict=True)}

    def row(self, quality: str) -> str:
        """The row's cells in order, on one line."""
        return " ".join(self.cells(quality).values())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    base = tmp_path_factory.mktemp("demo")
    home, reports = base / "home", base / "reports"
    # store URLs that lead nowhere: the demo runs on its own embedded stack and must ignore them
    env = {**os.environ, "SCO_POSTGRES_URL": "postgresql://postgres@127.0.0.1:9/none",
           "SCO_CLICKHOUSE_URL": "http://127.0.0.1:9", "SCO_NATS_URL": "nats://127.0.0.1:9"}
    try:
        result = subprocess.run([sys.executable, "-m", "sco", "demo", "--live", "45", "--home", str(home),
                                 "--reports", str(reports)], capture_output=True, text=True, timeout=600, env=env)
        assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        out = result.stdout
        yield DemoRun(home, reports, out, out[out.index("quality "):])
    finally:
        manager.down(home / "stack")  # a run that completes leaves its stack up for browsing (docs/demo.md)


def test_the_demo_s_summary_measures_every_row_and_passes_the_rows_it_can_meet(demo: DemoRun) -> None:
    print(demo.stdout[demo.stdout.index("SCO demo: "):])  # the summary, for -s / -rP
    for quality in ROWS:
        row = demo.row(quality)
        assert "not computed" not in row and "no notice" not in row, row
        assert demo.cells(quality)["verdict"] in ("PASS", "FAIL", "n/a"), f"no verdict: {row}"
    failed = [q for q in MUST_PASS if demo.cells(q)["verdict"] != "PASS"]
    assert not failed, "\n".join(demo.row(q) for q in failed)
    p99 = re.search(r"Placement decision .*p99 (\d+\.\d) s", demo.table)
    assert p99 and float(p99.group(1)) <= 10, demo.row("Placement decision")
    outage = re.search(r"(\d+) drained, (\d+) overran while both controllers were down", demo.table)
    assert outage and int(outage.group(1)) > 0 and int(outage.group(2)) == 0
    assert "excluded" in demo.row("Exclusion")


def test_wasted_work_is_measured_at_the_compressed_rate_with_its_production_rate_estimates_beside_it(
        demo: DemoRun) -> None:
    wasted = demo.cells("Wasted work")["measured"]
    figure = re.search(r"(\d+\.\d) % at 150 %/h \((\d+\.\d+) h of (\d+\.\d+) reclaimable h\)", wasted)
    assert figure and float(figure.group(3)) > 0, wasted
    linear = re.search(r"at 4 %/h: (\d+\.\d+) % scaled linearly", wasted)
    assert linear and abs(float(linear.group(1)) - float(figure.group(1)) * 4 / 150) < 0.01, wasted
    assert re.search(r"(\d+\.\d+) % by the contracts' checkpoint rules", wasted), wasted
    fed = re.search(r"Wasted work: ledger: wasted_s on (\d+) drained", demo.table)
    assert fed and int(fed.group(1)) > 0, demo.table


def test_net_saving_is_measured_at_the_compressed_rate_with_the_rate_breach_fallback_s_share_computed_beside_it(
        demo: DemoRun) -> None:
    net = demo.cells("Net saving")["measured"]
    measured = re.search(r"^(\d+\.\d) % at 150 %/h; ≈ (\d+\.\d) % without the fallback that rate breaches started", net)
    assert measured, net
    assert float(measured.group(2)) > float(measured.group(1)), "the breach fallback is a cost: without it, more saved"


def test_the_net_saving_at_the_production_rate_is_computed_from_the_run_and_meets_the_target_or_names_why(
        demo: DemoRun) -> None:
    cells = demo.cells("Net saving at 4 %/h")
    computed = re.match(r"(\d+\.\d) % at 4 %/h, computed from this run's hours: wasted work by the contracts' rules",
                        cells["measured"])
    assert computed, cells
    if float(computed.group(1)) >= 55:
        assert cells["verdict"] == "PASS", cells
    else:
        assert cells["verdict"] == "FAIL" and "below 55 % because costs in % of the counterfactual: " in \
            cells["measured"], cells


def test_the_summary_states_the_simulated_hour_and_the_rates_and_fits_120_columns(demo: DemoRun) -> None:
    summary = demo.stdout[demo.stdout.index("SCO demo: "):demo.stdout.index("\nReports: ")]
    assert all(len(line) <= 120 for line in summary.splitlines()), summary
    head = " ".join(summary.split("\n\n")[0].split())
    assert "pinned at 09:00 UTC" in head and "reclaims at 150 %/h (production ~4 %/h)" in head, head
    assert re.search(r"^Verdicts: \d+ PASS", summary, re.M), summary


def test_real_agents_booted_from_the_user_data_the_controller_sent_and_drained_on_a_newcomer_s_machine(
        demo: DemoRun) -> None:
    """Issue 16: with or without the Slurm test bed, real sco-agent processes run on simulated Kubernetes nodes,
    booted from the cloud-config the controller sent with the launch (read back from the region, rendered without
    cloud-init, its password the one the controller minted for the instance), and they drain."""
    from sco.demo.userdata_agents import launch_password
    from sco.stack import credentials


    cell = demo.cells("Agents from user-data")["measured"]
    figures = re.search(r"^(\d+) booted from the user-data the controller sent: (\d+) got a notice, (\d+) drained, "
                        r"0 overran, "
                        r"drain p50 (\d+\.\d) s", cell)
    assert figures and int(figures.group(1)) >= 1 and int(figures.group(3)) >= 1, cell
    assert "refused at boot" not in cell and "in-process agents: " in cell, cell
    assert re.search(r"\((\d+) real sco-agent process\(es\) booted from the user-data the controller sent",
                     " ".join(demo.stdout.split())), demo.stdout[-3000:]
    nodes = [d for d in (demo.home / "run").glob("*/userdata-nodes/*") if d.is_dir()]
    assert len(nodes) >= int(figures.group(1))  # a boot that ended after the last count has its directory too
    minted = credentials.load_or_create(demo.home / "stack").agents
    held = 0
    for node in nodes:  # what the launch sent, and what cloud-init's half wrote from it for this instance
        sent = (node / "user-data.txt").read_text()
        assert sent.startswith("## template: jinja\n#cloud-config\n")
        # the stack holds the controller's password for the instance, or none once the instance ended (the
        # controller removes an ended instance's NATS user, ADR-31): never another one
        assert minted.get(f"r1/{node.name}") in (launch_password(sent), None), node.name
        held += minted.get(f"r1/{node.name}") is not None
        assert f'"instance":"{node.name}"' in (node / "etc" / "sco" / "agent-userdata.json").read_text()
    assert held >= 1, "no booted instance's NATS user is the one its user-data carries"
    assert any("sco-agent running for " + n.name in (n / "agent.log").read_text() for n in nodes)


def test_the_reports_are_written(demo: DemoRun) -> None:
    fleet = demo.reports / "fleet-r1.html"
    assert fleet.exists() and "<svg" in fleet.read_text()
    assert len(list(demo.reports.glob("showback-*.html"))) == 3


def test_the_next_run_stops_the_stack_this_run_left_up_and_starts_an_empty_one(
        demo: DemoRun, monkeypatch: pytest.MonkeyPatch) -> None:
    """What running the demo twice needs, without a second full run: the stack phase of a second run."""
    import psycopg

    from sco.demo.context import DemoConfig, RunContext
    from sco.demo.display import Display
    from sco.demo.procs import Procs
    from sco.demo.runner import start_stack
    from sco.demo.summary import Summary

    stack = demo.home / "stack"
    left = load_urls(stack)
    assert left.postgres, "a complete run leaves its stack up"
    with psycopg.connect(left.postgres) as conn:
        assert conn.execute("SELECT count(*) FROM controller_cycles").fetchone()[0] > 0
    old_pids = [s.pid for s in manager.status(stack, env={}) if s.pid]
    assert old_pids and all(pid_alive(p) for p in old_pids)
    for store, var in ENV_VARS.items():  # ignored again; start_stack mutates os.environ, monkeypatch restores it
        monkeypatch.setenv(var, f"{store}://127.0.0.1:9")
    monkeypatch.setenv("SCO_HOME", str(stack))
    cfg = DemoConfig(home=demo.home)
    ctx = RunContext(cfg=cfg, home=demo.home, run_dir=demo.home / "run" / "second", procs=Procs(),
                     display=Display(tty=False), summary=Summary(started=datetime.now(UTC)))
    try:
        asyncio.run(start_stack(ctx))
        assert not [p for p in old_pids if pid_alive(p)], "the previous run's servers still run"
        with psycopg.connect(ctx.urls.postgres) as conn:
            assert conn.execute("SELECT count(*) FROM controller_cycles").fetchone()[0] == 0
    finally:
        manager.down(stack)


def test_the_demo_leaves_a_dagster_instance_with_its_runs_materialisations_and_check_results(demo: DemoRun) -> None:
    """What `dagster dev` shows after the demo (docs/demo.md): DAGSTER_HOME=<home>/dagster."""
    from dagster import AssetKey

    from sco.demo.instance import open_instance

    instance = open_instance(demo.home / "dagster")
    try:
        assert len(instance.get_runs()) >= 2
        for name in ("pool_rankings", "correlation_groups", "contract_breaches", "recommendations"):
            assert instance.get_latest_materialization_event(AssetKey(name)) is not None, name
        assert instance.get_materialized_partitions(AssetKey("savings_attribution"))
        from orchestration.definitions import build_definitions
        from sco.demo.instance import GE_CHECKS

        keys = [k for k in build_definitions().get_repository_def().asset_graph.asset_check_keys
                if k.asset_key.to_user_string() in ("pool_rankings", "correlation_groups") and k.name not in GE_CHECKS]
        found = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
        assert set(found) == set(keys)
    finally:
        instance.dispose()
