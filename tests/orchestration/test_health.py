"""The rules of the asset checks (``orchestration.health``), without services: each passes on what is right and
fails on what is wrong, naming what is wrong."""

from __future__ import annotations

from datetime import timedelta

from orchestration.health import FRESHNESS, archive_matches_month, breaches_have_events, groups_cover_pools


def test_the_promised_freshness_is_the_issue_s() -> None:
    assert {"pool_rankings": timedelta(minutes=10), "savings_attribution": timedelta(hours=2),
                         "correlation_groups": timedelta(hours=26), "recommendations": timedelta(hours=26),
                         "cost_archive": timedelta(days=32)} == FRESHNESS


def test_every_pool_in_exactly_one_group_passes() -> None:
    ok, message = groups_cover_pools(["a", "b", "c"], [("a", "g1"), ("b", "g1"), ("c", "g2")])
    assert ok and message == "each of 3 pools is in exactly one of 2 groups"


def test_a_pool_in_no_group_in_two_groups_or_unknown_fails_named() -> None:
    ok, message = groups_cover_pools(["a", "b", "c"], [("a", "g1"), ("a", "g2"), ("b", "g1"), ("x", "g3")])
    assert not ok
    assert message == ("pools in no group: c (1); in more than one group: a (1); not in the catalogue: x (1)")


def test_no_pools_at_all_fails() -> None:
    assert groups_cover_pools([], []) == (False, "no reclaimable pools in the catalogue")


def test_an_archive_matches_its_month_when_manifest_clickhouse_and_files_agree() -> None:
    manifest = {"month": "2026-10", "files": {"cost_attribution": {"rows": 12}, "savings_ledger": {"rows": 3}}}
    ok, message = archive_matches_month(manifest, {"cost_attribution": 12, "savings_ledger": 3},
                                        {"cost_attribution": 12, "savings_ledger": 3})
    assert ok and "cost_attribution 12 rows" in message


def test_an_archive_short_of_rows_fails_naming_the_table_and_the_counts() -> None:
    manifest = {"month": "2026-10", "files": {"cost_attribution": {"rows": 12}, "savings_ledger": {"rows": 3}}}
    ok, message = archive_matches_month(manifest, {"cost_attribution": 14, "savings_ledger": 3},
                                        {"cost_attribution": 12, "savings_ledger": 3})
    assert not ok
    assert message == "archive 2026-10 does not match the month: cost_attribution: manifest 12, ClickHouse 14, file 12"


def test_an_archive_without_files_fails() -> None:
    assert archive_matches_month({"month": "2026-10", "files": {}}, {}, {})[0] is False


def test_breaches_pass_with_an_owner_and_an_event_each() -> None:
    ok, message = breaches_have_events({"etl": "data-eng"}, {"etl": "id-1"}, {"id-1"})
    assert ok and message.endswith("etl (data-eng)")
    assert breaches_have_events({}, {}, set()) == (True, "no workload above its declared interruption tolerance")


def test_a_breach_without_an_owner_or_its_event_fails_named() -> None:
    ok, message = breaches_have_events({"etl": "", "ci": "ci-team"}, {"etl": "id-1", "ci": "id-2"}, {"id-1"})
    assert not ok
    assert message == "no owner to alert: etl; no contract-breach event in the outbox: ci"
