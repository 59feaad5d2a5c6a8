"""The archive's check on real ClickHouse: the month archived from the worked example's ledger matches the month
(manifest, ClickHouse and Parquet files agree); a row that lands in the month afterwards makes it fail, named."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.services


@pytest.fixture
def instance() -> Iterator[Any]:
    """An ephemeral Dagster instance, disposed at the end (a leaked one's temporary directory is cleaned up by
    the garbage collector whenever it runs, and its ResourceWarning then surfaces in an unrelated test)."""
    from dagster import DagsterInstance

    with DagsterInstance.ephemeral() as ephemeral:
        yield ephemeral


def test_the_archive_matches_its_month_until_a_late_row_lands_in_it(
        clickhouse_migrated_url: str, pg_migrated_url: str, tmp_path: Path, instance: Any) -> None:
    from dagster import AssetSelection, materialize

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


@pytest.mark.testbed
@pytest.mark.xdist_group("ceph-bed")
def test_with_an_archive_url_the_month_goes_to_the_locked_bucket_the_check_reads_it_and_a_changed_rerun_fails(
        clickhouse_migrated_url: str, pg_migrated_url: str, tmp_path: Path, instance: Any) -> None:
    """The Dagster wiring on the real RGW: ``archive_url`` picks the Object Lock target (keys from the
    environment), the check reads the manifest and the pinned versions from the bucket, an identical re-run is
    a no-op and a re-run after the month changed fails the run with ARC001. The bucket keeps its one-day lock
    (``archive_retention_days`` is whole days) and is swept by test_archive_targets once it lapses."""
    import os
    import uuid
    from datetime import UTC, datetime
    from unittest import mock

    from dagster import materialize

    from orchestration import ledger
    from orchestration.archive_targets import archive_s3_client
    from orchestration.defs.archive.assets import cost_archive
    from orchestration.defs.archive.checks import CHECKS
    from orchestration.defs.attribution.assets import savings_attribution
    from orchestration.resources import AnalyticsSettings
    from tests.orchestration import worked_example as ex
    from tests.orchestration.helpers import Stack, load_worked_example
    from tests.support.testbeds import ceph_env

    bed = ceph_env()
    ident = bed["identities"]["orchestrator"]
    bucket = f"sco-arc-test-dagster-{uuid.uuid4().hex[:8]}"
    stack = Stack(clickhouse_migrated_url, pg_migrated_url, tmp_path)
    load_worked_example(stack)
    ch = stack.ch()
    for h in range(24):
        inputs = ledger.read_hour(ch, "r1", ex.DAY + timedelta(hours=h))
        ledger.write_hour(ch, "r1", inputs, ledger.attribute_hour(inputs))
    settings = AnalyticsSettings(region="r1", archive_dir=str(tmp_path / "local"), archive_url=f"s3://{bucket}",
                                 archive_retention_days=1, archive_create_bucket=True)
    resources = {**stack.resources(), "settings": settings}
    month = ex.DAY.strftime("%Y-%m")

    def run() -> object:
        return materialize([cost_archive, savings_attribution, *CHECKS], resources=resources, instance=instance,
                           selection=[cost_archive], partition_key=ex.DAY.strftime("%Y-%m-01"), raise_on_error=False)

    with mock.patch.dict(os.environ, {"SCO_ARCHIVE_ENDPOINT": bed["endpoint"],
                                      "SCO_ARCHIVE_ACCESS_KEY": ident["access_key"],
                                      "SCO_ARCHIVE_SECRET_KEY": ident["secret_key"]}):
        first = run()
        assert first.success  # type: ignore[attr-defined]
        (evaluation,) = first.get_asset_check_evaluations()  # type: ignore[attr-defined]
        assert evaluation.passed and evaluation.description.endswith("(manifest, ClickHouse and files agree)")
        (written,) = first.asset_materializations_for_node("cost_archive")  # type: ignore[attr-defined]
        assert written.metadata["action"].value == "written"
        assert written.metadata["directory"].value == f"s3://{bucket}/r1/{month}/"
        again = run()
        (unchanged,) = again.asset_materializations_for_node("cost_archive")  # type: ignore[attr-defined]
        assert unchanged.metadata["action"].value == "unchanged"

        ch.command("ALTER TABLE savings_ledger DELETE WHERE hour = {h:DateTime('UTC')} SETTINGS mutations_sync = 1",
                   {"h": (ex.DAY + timedelta(hours=5)).replace(tzinfo=None)})
        changed = run()
        assert not changed.success  # type: ignore[attr-defined]
        failure = next(e for e in changed.all_events if e.is_step_failure)  # type: ignore[attr-defined]
        cause = failure.step_failure_data.error.cause
        assert cause.cls_name == "ArchiveRefused"
        assert cause.message.startswith(f"orchestration.errors.ArchiveRefused: ARC001 archive {month} of r1 is "
                                        f"already at s3://{bucket}/r1/{month}/ and the new export differs "
                                        "(savings_ledger: SHA-256 changed)")
    assert not (tmp_path / "local").exists()
    s3 = archive_s3_client(bed["endpoint"], ident["access_key"], ident["secret_key"])
    lock = s3.get_object_retention(Bucket=bucket, Key=f"r1/{month}/manifest.json")["Retention"]
    assert lock["Mode"] == "COMPLIANCE"
    assert timedelta(hours=23) < lock["RetainUntilDate"] - datetime.now(UTC) <= timedelta(days=1)
    assert len(s3.list_object_versions(Bucket=bucket)["Versions"]) == 3  # the re-runs added no version
