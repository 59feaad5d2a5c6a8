"""The archive's check on real ClickHouse: the month archived from the worked example's ledger matches the month
(manifest, ClickHouse and Parquet files agree); a row that lands in the month afterwards makes it fail, named."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

pytestmark = pytest.mark.services


def test_the_archive_matches_its_month_until_a_late_row_lands_in_it(
        clickhouse_migrated_url: str, pg_migrated_url: str, tmp_path: Path) -> None:
    from dagster import AssetSelection, DagsterInstance, materialize

    from orchestration import ledger
    from orchestration.defs.archive.assets import cost_archive
    from orchestration.defs.archive.checks import CHECKS
    from orchestration.defs.attribution.assets import savings_attribution
    from tests.orchestration import worked_example as ex
    from tests.orchestration.helpers import Stack, load_worked_example

    stack = Stack(clickhouse_migrated_url, pg_migrated_url, tmp_path)
    load_worked_example(stack)
    ch = stack.ch()
    for h in range(24):
        inputs = ledger.read_hour(ch, "r1", ex.DAY + timedelta(hours=h))
        ledger.write_hour(ch, "r1", inputs, ledger.attribute_hour(inputs))
    instance = DagsterInstance.ephemeral()
    archived = materialize([cost_archive, savings_attribution, *CHECKS], resources=stack.resources(),
                           instance=instance, selection=[cost_archive], partition_key=ex.DAY.strftime("%Y-%m-01"))
    (evaluation,) = archived.get_asset_check_evaluations()
    assert evaluation.passed, evaluation.description
    counted = re.fullmatch(rf"archive {ex.DAY:%Y-%m}: cost_attribution (\d+) rows, savings_ledger (\d+) rows "
                           r"\(manifest, ClickHouse and files agree\)", evaluation.description or "")
    assert counted and int(counted.group(2)) == 24, evaluation.description  # etl, one row an hour

    # the month changes in ClickHouse after it was archived: one hour of the ledger re-attributed away
    ch.command("ALTER TABLE savings_ledger DELETE WHERE hour = {h:DateTime('UTC')} SETTINGS mutations_sync = 1",
               {"h": (ex.DAY + timedelta(hours=5)).replace(tzinfo=None)})
    checked = materialize([cost_archive, *CHECKS], resources=stack.resources(), instance=instance,
                          selection=AssetSelection.all_asset_checks())  # the check alone, on the archived month
    (evaluation,) = checked.get_asset_check_evaluations()
    assert not evaluation.passed
    assert evaluation.description == (f"archive {ex.DAY:%Y-%m} does not match the month: savings_ledger: "
                                      "manifest 24, ClickHouse 23, file 24")
