"""`sco contracts report` attaches each workload's 30-day replay from the pool history in ClickHouse (ADR-03):
against the real chDB front end holding the simulated region's history (`sco sim history`'s writer), and a clear
error naming the fix when there is no history."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controllers.replay.trace import Trace
from controllers.simregion.config import RegionConfig
from controllers.simregion.history import write_history
from sco.commands.contracts_replay import ReplayWindow, read_trace
from stores import clickhouse, migrate
from testkit.clickhouse import ClickHouseProcess
from tests.support.cli import sco

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[3] / "deploy" / "contracts"
START = datetime(2026, 9, 1, tzinfo=UTC)
# The CLI's default window is 30 days after 7 of warm-up; the tests replay 2 after 1 on the replay-only model and
# a quarter of a day through the production controller (30 days of the 14 example workloads through the
# controller take half an hour of CPU: a figure for docs/benchmarks.md, not a test).
DAYS, WARMUP = 2, 1
WINDOW = ("--replay-days", str(DAYS), "--warmup-days", str(WARMUP))
CONTROLLER_WINDOW = ("--replay-days", "0.25", "--warmup-days", str(WARMUP))


@pytest.fixture(scope="module")
def history_url(clickhouse_server: ClickHouseProcess) -> Iterator[str]:
    """One database with 3 days of the simulated region's history (70 pools, as the analytics tests use)."""
    url = clickhouse_server.create_database()
    client = clickhouse.client(url)
    try:
        migrate.migrate_clickhouse(client)
        write_history(client, RegionConfig(pools=70), days=DAYS + WARMUP, start=START)
    finally:
        client.close()
    yield url


def _rows(stdout: str) -> tuple[list[str], dict[str, str]]:
    """The compiled workloads of the compiler's report, and the replay table's rows by workload."""
    table = stdout.split("Replay (ADR-03)", 1)[1]
    for header in ("interruptions", "wasted work", "fallback starts", "net saving", "net %"):
        assert header in table
    workloads = re.findall(r"^(\S+@\d+)\s", stdout.split("Replay (ADR-03)")[0], re.M)
    rows = {line.split()[0]: line for line in table.splitlines()[3:] if re.match(r"^[a-z][a-z0-9-]+\s+\d", line)}
    return workloads, rows


def test_the_report_replays_the_history_in_clickhouse_through_the_production_controller(history_url: str) -> None:
    out = sco("contracts", "report", str(REPO), "--clickhouse", history_url, *CONTROLLER_WINDOW)
    assert out.returncode == 0, out.stderr
    assert "Replay (ADR-03): history in ClickHouse, 0.25 days to 2026-09-03" in out.stdout
    workloads, rows = _rows(out.stdout)
    assert len(workloads) == 14 and {w.split("@")[0] for w in workloads} == set(rows)
    assert "Replay engine: the production controller" in out.stdout and "replay-only model" not in out.stdout
    assert "the region is the recorded history" in out.stdout, "its approximations are stated"
    # ranked as the ranking asset ranks: the scorer and the reclaim forecast at the contracts' horizons
    # (a day of warm-up is history enough for a fit; a report without the forecast placed on another signal)
    assert re.search(r"ranking: the production scorer with the reclaim forecast at 45/60 min, refitted daily "
                     r"\(last model hgb-[0-9a-f]{16}, fitted on [\d,]+ samples\)", out.stdout), out.stdout[-3000:]
    assert "through the production controller" in out.stderr and "100 %" in out.stderr, "with progress"
    placed = [line for line in rows.values() if "€" in line and "/day)" in line]
    assert len(placed) == 14
    net = [float(line.split()[-1].rstrip("%")) for line in rows.values()]
    assert any(x > 0 for x in net), "reclaimable capacity saves someone money over a quarter of a day"


def test_the_report_attaches_each_workloads_replay_from_the_history_in_clickhouse(history_url: str) -> None:
    out = sco("contracts", "report", str(REPO), "--clickhouse", history_url, *WINDOW, "--replay-engine", "model")
    assert out.returncode == 0, out.stderr
    assert "Replay (ADR-03): history in ClickHouse, 2 days to 2026-09-03" in out.stdout
    workloads, rows = _rows(out.stdout)
    assert len(workloads) == 14
    assert {w.split("@")[0] for w in workloads} == set(rows), "one replay row per compiled workload"
    interrupted = [int(line.split()[2]) for line in rows.values()]
    assert sum(interrupted) > 0, "two days of the region's reclaims interrupt someone"
    assert any("€" in line and "/day)" in line for line in rows.values())
    assert "the replay-only model (--replay-engine model), not the production controller" in out.stdout, \
        "its figures are not a forecast"


def test_the_trace_read_from_clickhouse_holds_the_regions_waves_rate_cards_and_free_room(history_url: str) -> None:
    client = clickhouse.client(history_url)
    try:
        trace = read_trace(client, ReplayWindow("r1", DAYS, WARMUP))
    finally:
        client.close()
    assert trace.end - trace.start == timedelta(days=DAYS) and trace.warmup == timedelta(days=WARMUP)
    assert len(trace.pools) >= 70 and trace.reclaims
    assert all(0 < r.share <= 1 and 0 <= r.no_notice_share <= 1 for r in trace.reclaims)
    assert any(r.no_notice_share > 0 for r in trace.reclaims), "the region's ~2 % losses without notice"
    assert len(trace.rate_cards) >= (DAYS + WARMUP) * 288 - 2 and trace.free and trace.rate_cards[0][0] < trace.start


def test_without_history_the_report_says_so_and_names_the_fix(clickhouse_migrated_url: str) -> None:
    out = sco("contracts", "report", str(REPO), "--clickhouse", clickhouse_migrated_url)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "RPL001: no pool catalogue (provider_pools) for region 'r1'" in out.stderr
    assert "sco sim history" in out.stderr and "--no-replay" in out.stderr
    assert "r1/k8s-prod" in out.stdout, "the compiler's own report is still printed"
    skipped = sco("contracts", "report", str(REPO), "--no-replay", "--clickhouse", clickhouse_migrated_url)
    assert skipped.returncode == 0 and "Replay" not in skipped.stdout


def test_an_unreachable_clickhouse_is_a_clear_error(tmp_path: Path) -> None:
    out = sco("contracts", "report", str(REPO), "--clickhouse", "http://sco:x@127.0.0.1:1")
    assert out.returncode == 2 and "RPL002" in out.stderr and "Traceback" not in out.stderr


def test_a_controller_replay_without_postgresql_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from sco.commands import simulate_controller
    from sco.commands.contracts_replay import replay_contracts_through_controller
    from sco.errors import CliError

    def refused() -> None:
        raise FileNotFoundError("[Errno 2] No such file or directory: 'initdb'")

    monkeypatch.setattr(simulate_controller, "EmbeddedPostgres", refused)
    trace = Trace(start=START, end=START + timedelta(days=1), pools=(), capacity={}, reclaims=())
    with pytest.raises(CliError) as error:
        replay_contracts_through_controller(trace, [], 40)
    assert str(error.value).startswith("RPL003: cannot start the embedded PostgreSQL")
    assert "initdb" in str(error.value) and "--replay-engine model" in str(error.value)
