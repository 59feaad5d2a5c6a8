# mypy: disable-error-code="type-arg"
"""The reclaim forecast's model, refitted daily on the ClickHouse history and saved where the five-minute
ranking reads it (``AnalyticsSettings.forecast_model_dir``), and the check that yesterday's published forecast
scored better than every baseline on yesterday's realised reclaims (``orchestration.forecast.daily``)."""

from datetime import datetime

from dagster import (
    AssetCheckResult,
    AssetSelection,
    DefaultScheduleStatus,
    MaterializeResult,
    MetadataValue,
    ScheduleDefinition,
    asset,
    asset_check,
    define_asset_job,
)

from orchestration import groups
from orchestration.defs.catalogue.assets import pool_catalogue
from orchestration.forecast import daily, history, model
from orchestration.resources import AnalyticsSettings, ClickHouseResource, PostgresResource

from .assets import model_path, pool_rankings

__all__ = ["FORECAST_CHECKS", "forecast_beat_baselines_yesterday", "forecast_job", "forecast_schedule",
           "reclaim_forecast_model", "refit"]

TRAIN_DAYS = 7


def refit(clickhouse: ClickHouseResource, postgres: PostgresResource, settings: AnalyticsSettings,
          now: datetime) -> model.Forecaster:
    """Fit on the last ``TRAIN_DAYS`` of history and save where the ranking reads it."""
    fitted = history.train_from_history(clickhouse, settings.region, now, TRAIN_DAYS,
                                        history.declared_horizons(postgres),
                                        groups.groups_in_force(postgres, settings.region))
    model.save(fitted, model_path(settings))
    return fitted


@asset(group_name="analytics", deps=[pool_catalogue],
       description="Daily: the reclaim forecast's model (per horizon: 1 h and the longest checkpoint interval "
                   "declared) refitted on the last 7 days of history, versioned by a hash of its training window "
                   "and parameters; the five-minute ranking publishes its forecast.")
def reclaim_forecast_model(clickhouse: ClickHouseResource, postgres: PostgresResource,
                           settings: AnalyticsSettings) -> MaterializeResult:
    """Refit the region's reclaim forecast model on the recent history and report the fitted version and window."""
    postgres.migrate()
    now = settings.data_now(clickhouse)
    fitted = refit(clickhouse, postgres, settings, now)
    return MaterializeResult(metadata={
        "model_version": fitted.version, "samples": fitted.samples,
        "trained_from": fitted.trained_from.isoformat(), "trained_until": fitted.trained_until.isoformat(),
        "horizons_min": MetadataValue.json(list(fitted.horizons_min))})


@asset_check(asset=pool_rankings, description="Yesterday's published reclaim forecast scored better than the best "
             "baseline (price rank, last-24 h reclaim rate, the composite score) on log-loss and Brier score.")
def forecast_beat_baselines_yesterday(clickhouse: ClickHouseResource, postgres: PostgresResource,
                                      settings: AnalyticsSettings) -> AssetCheckResult:
    """Score yesterday's published forecast against the baselines and record the score; passes when it beat
    them (or nothing is scorable yet)."""
    now = settings.data_now(clickhouse)
    day = daily.yesterday(now)
    in_force = groups.groups_in_force(postgres, settings.region)
    scored = daily.score_day(clickhouse, settings.region, day, in_force, now)
    if scored is None:
        return AssetCheckResult(passed=True, description=f"no forecast published on {day.date()} with a known "
                                "outcome yet: nothing to score", metadata={"day": str(day.date())})
    daily.write_score(clickhouse, settings.region, now, scored)
    best_ll = min(b.log_loss for b in scored.baselines)
    best_br = min(b.brier for b in scored.baselines)
    return AssetCheckResult(
        passed=scored.passed,
        description=(f"{day.date()}: forecast log-loss {scored.forecast.log_loss:.5f} "
                     f"({scored.forecast.log_loss / best_ll:.3f}x the best baseline), Brier "
                     f"{scored.forecast.brier:.6f} ({scored.forecast.brier / best_br:.3f}x)"),
        metadata={"day": str(day.date()), "samples": scored.samples, "model_version": scored.model_version,
                  "forecast_log_loss": scored.forecast.log_loss, "forecast_brier": scored.forecast.brier,
                  "baselines": MetadataValue.json({b.name: [b.log_loss, b.brier] for b in scored.baselines})})


FORECAST_CHECKS = [forecast_beat_baselines_yesterday]
forecast_job = define_asset_job("reclaim_forecast_daily", AssetSelection.assets(reclaim_forecast_model))
forecast_schedule = ScheduleDefinition(job=forecast_job, cron_schedule="17 0 * * *", execution_timezone="UTC",
                                       default_status=DefaultScheduleStatus.RUNNING)
