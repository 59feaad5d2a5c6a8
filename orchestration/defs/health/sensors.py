"""The run-failure sensor: a failed run of any job of this code location posts an Alertmanager-format alert
(``orchestration.alerts``) to ``SCO_ALERT_WEBHOOK_URL``; unset, it logs a warning and posts nothing."""

import os
from datetime import UTC, datetime

from dagster import DefaultSensorStatus, RunFailureSensorContext, run_failure_sensor

from orchestration.alerts import ALERT_WEBHOOK_ENV, FailedRun, post_alert, run_failure_alert

__all__ = ["alert_on_run_failure", "failed_run"]


def failed_run(context: RunFailureSensorContext) -> FailedRun:
    """What a failed run was: job, run id, message, failed steps and assets."""
    run = context.dagster_run
    steps = [e.step_key or "" for e in context.get_step_failure_events()]
    assets = sorted(k.to_user_string() for k in (run.asset_selection or ()))
    return FailedRun(job=run.job_name, run_id=run.run_id, message=context.failure_event.message or "run failed",
                     steps=[s for s in steps if s], assets=assets)


@run_failure_sensor(name="alert_on_run_failure", default_status=DefaultSensorStatus.RUNNING,
                    description="Posts an Alertmanager-format alert for every failed run to SCO_ALERT_WEBHOOK_URL.")
def alert_on_run_failure(context: RunFailureSensorContext) -> None:
    """Post an Alertmanager-format alert for the failed run (a warning when no webhook is set)."""
    url = os.environ.get(ALERT_WEBHOOK_ENV, "")
    run = failed_run(context)
    if not url:
        context.log.warning(f"run {run.run_id} of {run.job} failed and {ALERT_WEBHOOK_ENV} is not set: no alert "
                            "posted (set it to the Alertmanager-format webhook receiver)")
        return
    body = run_failure_alert(run, os.environ.get("SCO_REGION", "r1"), datetime.now(UTC),
                             os.environ.get("SCO_DAGSTER_UI_URL", ""))
    status = post_alert(url, body)
    context.log.info(f"alert for the failed run {run.run_id} of {run.job} posted ({status})")
