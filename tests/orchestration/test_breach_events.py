"""Breaches are events (ADR-27, ADR-28): a workload whose measured interruption rate exceeds its declared
tolerance gets one ``contract-breach`` event, through the path every event takes — the outbox in PostgreSQL,
the relay to JetStream, the ingest into ClickHouse — where the showback page reads it; the breaches' check
fails when a breach has no event. Real PostgreSQL, NATS and ClickHouse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest


def _breach(workload: str, measured: float, declared: float) -> Any:
    from orchestration.insights import Breach

    return Breach(workload, "data-eng", 300.0, 9, measured, declared)


def test_only_a_breached_workload_gets_an_event_and_its_id_is_one_per_day() -> None:
    from orchestration.breach_events import breach_event_id, breach_events

    now = datetime(2026, 11, 3, 12, tzinfo=UTC)
    events = breach_events([_breach("etl", 3.0, 2.0), _breach("ci", 1.0, 2.0)], "r1", now)
    assert [(e.kind, e.workload, e.cause, e.attributes["owner"]) for e in events] == [
        ("contract-breach", "etl", "interruption-above-tolerance", "data-eng")]
    assert events[0].attributes["measured_rate_pct_h"] == "3.000000"
    assert breach_event_id("r1", "etl", now) == breach_event_id("r1", "etl", now + timedelta(hours=5))
    assert breach_event_id("r1", "etl", now) != breach_event_id("r1", "etl", now + timedelta(days=1))


def _reclaims(stack: Any, n: int) -> None:
    """``n`` reclaim notices of the worked example's workload on its day: above its declared 2 %/h."""
    from contracts.events import Event
    from tests.orchestration import worked_example as ex

    rows = [Event(kind="notice", time=ex.DAY + timedelta(hours=1, minutes=i), region="r1", pool=ex.RC,  # type: ignore[arg-type]
                  instance=f"rc-{i}", workload="etl", cause="reclaimed", source="breach-test").row() for i in range(n)]
    stack.ch().insert("events", [list(r.values()) for r in rows], list(rows[0]))


def _materialise_breaches(stack: Any) -> Any:
    from dagster import materialize

    from orchestration import ledger
    from orchestration.defs.attribution.assets import savings_attribution
    from orchestration.defs.insights.assets import contract_breaches
    from orchestration.defs.insights.checks import CHECKS
    from tests.orchestration import worked_example as ex

    ch = stack.ch()
    for h in range(24):
        inputs = ledger.read_hour(ch, "r1", ex.DAY + timedelta(hours=h))
        ledger.write_hour(ch, "r1", inputs, ledger.attribute_hour(inputs))
    return materialize([contract_breaches, savings_attribution, *CHECKS], resources=stack.resources(),
                       selection=[contract_breaches], raise_on_error=False)


def test_a_breach_travels_outbox_relay_ingest_to_clickhouse_and_the_showback_page(
        clickhouse_migrated_url: str, pg_migrated_url: str, nats_url: str, tmp_path: Path) -> None:
    from reports.data import ShowbackData, breach_events
    from reports.pages import showback_page
    from stores import ingest, outbox
    from tests.orchestration import worked_example as ex
    from tests.orchestration.helpers import Stack, load_worked_example

    stack = Stack(clickhouse_migrated_url, pg_migrated_url, tmp_path)
    load_worked_example(stack)
    _reclaims(stack, 10)
    result = _materialise_breaches(stack)
    assert result.success
    check = result.get_asset_check_evaluations()[0]
    assert check.passed and "etl (data-eng)" in (check.description or ""), check.description
    meta = result.asset_materializations_for_node("contract_breaches")[0].metadata
    assert meta["breached"].value == "etl" and meta["events_enqueued"].value == 1
    assert _materialise_breaches(stack).asset_materializations_for_node("contract_breaches")[0] \
        .metadata["events_enqueued"].value == 0  # the same day again: nothing enqueued twice

    assert outbox.main(["--once", "--postgres", pg_migrated_url, "--nats", nats_url,
                        "--clickhouse", clickhouse_migrated_url]) == 0
    ingest.drain(nats_url, clickhouse_migrated_url)
    rows = stack.ch().rows("SELECT workload, cause, JSONExtractString(attributes, 'owner') FROM events FINAL "
                           "WHERE kind = 'contract-breach'")
    assert rows == [("etl", "interruption-above-tolerance", "data-eng")]

    month = ex.DAY.date().replace(day=1)
    from stores.clickhouse import client

    reader = client(clickhouse_migrated_url)  # what the reports read through
    try:
        found = breach_events(reader, "etl", month)
    finally:
        reader.close()
    assert len(found) == 1 and found[0][2] == "2.000000"
    page = showback_page(ShowbackData("etl", month, _month_row(), [], {}, None, None, found))
    assert "1 contract-breach event(s) this month" in page and "declared 2.000000 %/h" in page


def test_the_breaches_check_fails_naming_a_breach_without_its_event(
        clickhouse_migrated_url: str, pg_migrated_url: str, tmp_path: Path) -> None:
    from tests.orchestration.helpers import Stack, load_worked_example

    stack = Stack(clickhouse_migrated_url, pg_migrated_url, tmp_path)
    load_worked_example(stack)
    _reclaims(stack, 10)
    assert _materialise_breaches(stack).success
    with stack.pg().connection() as conn:
        assert conn.execute("DELETE FROM outbox WHERE subject LIKE %s", ("%contract-breach",)).rowcount == 1
        conn.commit()
    from dagster import AssetSelection, materialize

    from orchestration.defs.insights.assets import contract_breaches
    from orchestration.defs.insights.checks import CHECKS

    checked = materialize([contract_breaches, *CHECKS], resources=stack.resources(),
                          selection=AssetSelection.all_asset_checks())  # the check alone, the asset not re-run
    evaluation = checked.get_asset_check_evaluations()[0]
    assert not evaluation.passed
    assert evaluation.description == "no contract-breach event in the outbox: etl"


def _month_row() -> dict[str, Any]:
    from reports.data import LINES

    numbers = ("instance_hours", "counterfactual_eur", "gross_saving_eur", *LINES, "costs_eur", "net_saving_eur",
               "wasted_hours", "defect_wasted_eur", "depth_premium_eur", "false_positive_hours", "false_positive_eur",
               "net_pct")
    return {**dict.fromkeys(numbers, 0), "label": "rate-card saving"}


pytestmark = pytest.mark.services
