"""What the demo prints, without running it: the summary fits a 120-column terminal, with each quality row
once and how each figure was measured under the table; without a terminal each phase is printed once."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from sco.demo.context import DemoConfig, RunContext
from sco.demo.display import Display
from sco.demo.procs import Procs
from sco.demo.runner import PHASES, Phase, drive
from sco.demo.summary import Summary
from sco.demo.table import render_summary, tally

# the rows of a real run (the capture in README.md), the widest the demo has printed
ROWS = [
    ["Notice to drain signal", "≤ 2 s p99", "p50 90 ms, p99 188 ms (n=54)", "PASS",
     "provider notice event → agent's first drain step (events)"],
    ["Placement decision", "≤ 10 s p99", "p50 6.4 s, p99 15.0 s (n=14)", "FAIL",
     "first acting controller pass → first launch, per workload (token budget included)"],
    ["Exclusion", "≤ 60 s", "r1-h1-amd-g4-2xlarge-rc excluded 0.2 s after its third wave", "PASS",
     "excluded event received − third reclaim call (watcher on JetStream)"],
    ["Guaranteed floor", "rebuilt ≤ 15 min after a hall loss", "restored 8× , last 67 s after the hall reclaim",
     "PASS", "floor-restored events after the h2 reclaim"],
    ["Drain on the Slurm test bed", "job signalled and requeued",
     "node1 drained (scheduler, 1 job) in 0.4 s; job 12: RUNNING on node2, restarts 1", "PASS",
     "real sco-agent process + scontrol; scontrol show job"],
    ["Drains without a control plane", "exactly as usual", "25 drained, 0 overran while both controllers were down",
     "PASS", "events during the outage"],
    ["Wasted work", "≤ 3 % of reclaimable hours", "12.0 % at 150 %/h (0.488 h of 4.06 reclaimable h); at 4 %/h: "
     "0.32 % scaled linearly (a lower bound), 0.46 % by the contracts' checkpoint rules", "FAIL",
     "ledger: wasted_s on 51 drained/overrun events (1755 instance-s; 0 unit(s) without a start time), from unit "
     "start times and the declared checkpoint cadence (ADR-20) ÷ reclaimable instance hours (savings_ledger)"],
    ["Orchestrator cost", "≤ 2 % of realised saving", "0.00 % (€0.0003 of €6.55 net)", "PASS",
     "fct_savings_ledger; footprint = measured CPU-s of controllers, ingest, relay, watcher, agents and analytics "
     "at €0.04/vCPU-h"],
]
HEADLINE = ("SCO demo: simulated region's day pinned at 09:00 UTC (its demand cycle's mean), reclaims at 150 %/h "
            "(production ~4 %/h); placement settled in 30 s, then 150 s of timeline, 710 events, peak fleet 141 "
            "nodes (3 real sco-agent process(es) on the Slurm test bed, the rest in-process agents on simulated "
            "nodes); drill on 2 node(s); median drain 1.8 s")


def test_every_line_of_the_summary_fits_a_120_column_terminal() -> None:
    text = render_summary(HEADLINE, ROWS)
    too_wide = [line for line in text.splitlines() if len(line) > 120]
    assert not too_wide, too_wide


def test_each_quality_row_starts_one_line_of_the_table_with_its_measured_figure() -> None:
    lines = render_summary(HEADLINE, ROWS).splitlines()
    for quality, _, measured, _, _ in ROWS:
        starting = [line for line in lines if line.startswith(quality + " ")]
        assert len(starting) == 1, (quality, starting)
        assert measured.split(" ", 1)[0] in starting[0]
    assert "25 drained, 0 overran while both controllers were down" in "\n".join(lines)


def test_how_each_figure_was_measured_is_a_note_under_the_table_not_a_column() -> None:
    text = render_summary(HEADLINE, ROWS)
    table, notes = text.split("How each figure was measured:")
    assert "ledger: wasted_s" not in table
    joined = " ".join(notes.split())
    for quality, _, _, _, how in ROWS:
        assert f"{quality}: {' '.join(how.split())}" in joined


def test_a_narrow_summary_still_holds_every_word_of_every_cell() -> None:
    text = render_summary(HEADLINE, ROWS, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    words = set(text.split())
    for row in ROWS:
        assert set(" ".join(row).split()) <= words


def test_the_summary_of_a_run_with_no_events_fits_too() -> None:
    summary = Summary(started=datetime(2026, 11, 29, tzinfo=UTC))
    text = summary.render()
    assert all(len(line) <= 120 for line in text.splitlines())
    assert "Notice to drain signal" in text and "no notice" in text


def test_without_a_terminal_each_phase_is_printed_once(capsys: pytest.CaptureFixture[str]) -> None:
    display = Display(tty=False)
    ctx = RunContext(cfg=DemoConfig(), home=DemoConfig().home, run_dir=DemoConfig().home, procs=Procs(),
                     display=display, summary=Summary(started=datetime.now(UTC)))

    async def step(c: RunContext) -> None:
        c.display.refresh()              # the tick's refresh: a count line, not the phase again
        c.display.set_phase("a step of the timeline")
        c.display.set_phase("a step of the timeline")

    phases = [Phase(p.name, step) for p in PHASES]
    asyncio.run(drive(phases, ctx))
    out = capsys.readouterr().out.splitlines()
    for phase in PHASES:
        assert sum(phase.name in line for line in out) == 1, (phase.name, out)
    assert sum("a step of the timeline" in line for line in out) == len(PHASES)  # once per set, not per call


def test_a_number_and_its_unit_stay_on_one_line() -> None:
    lines = render_summary(HEADLINE, ROWS).splitlines()
    assert not [line for line in lines if re.match(r"\s*(s|ms|%|h)(\s|$|,|;)", line)], lines
    assert any(line.endswith("median drain 1.8 s") or line.startswith("1.8 s") for line in lines)


def test_each_row_ends_in_its_verdict_and_the_tally_names_the_misses() -> None:
    lines = render_summary(HEADLINE, ROWS).splitlines()
    for quality, _, _, verdict, _ in ROWS:
        first = next(line for line in lines if line.startswith(quality + " "))
        assert first.endswith(" " + verdict), first
    assert tally(ROWS) == "Verdicts: 6 PASS; 2 FAIL (Placement decision, Wasted work)"
    assert tally(ROWS) in " ".join(" ".join(lines).split())


def test_a_summary_judges_each_target_from_its_figure() -> None:
    summary = Summary(started=datetime(2026, 11, 29, tzinfo=UTC))
    summary.money |= {"net_pct": 54.9, "orchestrator_pct": 1.9, "net_eur": 1.0, "wasted_pct": 3.1,
                      "wasted_hours": 0.1, "reclaimable_hours": 3.2}
    verdicts = {row.quality: row.verdict for row in summary.rows()}
    assert verdicts["Net saving"] == "FAIL" and verdicts["Orchestrator cost"] == "PASS"
    assert verdicts["Wasted work"] == "FAIL" and verdicts["Notice to drain signal"] == "n/a"
    summary.money |= {"net_pct": 55.0, "wasted_pct": 3.0}
    verdicts = {row.quality: row.verdict for row in summary.rows()}
    assert verdicts["Net saving"] == "PASS" and verdicts["Wasted work"] == "PASS"


def _context(display: Display, **cfg: Any) -> RunContext:
    config = DemoConfig(**cfg)
    return RunContext(cfg=config, home=config.home, run_dir=config.home, procs=Procs(), display=display,
                      summary=Summary(started=datetime.now(UTC)))


def test_the_slurm_step_without_a_test_bed_is_announced_as_skipped_with_why() -> None:
    from sco.demo.timeline import STEPS, announcement

    ctx = _context(Display(tty=False))
    assert ctx.slurm_conf is None
    by_action = {action.__name__: (label, unavailable) for _, label, action, unavailable in STEPS}
    label, unavailable = by_action["reclaim_slurm_node"]
    line = announcement(ctx, label, unavailable)
    assert line == "skipped: a real Slurm job, then a reclaim of its node (no Slurm test bed is up: " \
                   "deploy/testbed/slurm/up brings one)"
    assert announcement(_context(Display(tty=False), slurm=False), label, unavailable) == \
        "skipped: a real Slurm job, then a reclaim of its node (sco demo --no-slurm)"
    drill_label, drill_unavailable = by_action["drill"]
    assert announcement(ctx, drill_label, drill_unavailable) is None


def test_a_phase_quiet_for_12_s_gets_a_still_working_line(capsys: pytest.CaptureFixture[str]) -> None:
    display = Display(tty=False)
    display.set_phase("analytics")
    display.keepalive()
    assert capsys.readouterr().out.count("\n") == 1  # the phase line; nothing more within 12 s
    display._last_line = time.monotonic() - 12.5  # the phase's line was printed 12.5 s ago
    display.keepalive()
    display.keepalive()  # and the next one waits its own 10 s
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].endswith("]   still: analytics"), lines
