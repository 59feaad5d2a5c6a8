"""Freshness checks, one per asset that promises a cadence (rankings ≤ 10 min, attribution ≤ 2 h, groups and
recommendations ≤ 26 h, archive ≤ 32 d), and the sensor that evaluates them when one may have gone stale.

Dagster measures an asset's last update from its latest materialisation, or from the
``dagster/last_updated_timestamp`` the materialisation carries: ``pool_rankings`` reports the time of the newest
event it ranked, so a ranking the schedule recomputes on a history the ingest no longer feeds goes stale too."""

import warnings

from dagster import AssetKey, DefaultSensorStatus, build_last_update_freshness_checks, build_sensor_for_freshness_checks

from orchestration.health import FRESHNESS

__all__ = ["FRESHNESS_CHECKS", "freshness_sensor"]

with warnings.catch_warnings():  # superseded by FreshnessPolicy (preview in 1.13, needs a dagster.yaml switch)
    warnings.simplefilter("ignore")
    FRESHNESS_CHECKS = [check for key, lag in FRESHNESS.items()
                        for check in build_last_update_freshness_checks(assets=[AssetKey(key)], lower_bound_delta=lag)]
    freshness_sensor = build_sensor_for_freshness_checks(freshness_checks=FRESHNESS_CHECKS, minimum_interval_seconds=60,
                                                         default_status=DefaultSensorStatus.RUNNING)
