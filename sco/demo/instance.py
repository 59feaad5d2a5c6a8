"""The demo's persistent Dagster instance: ``DAGSTER_HOME`` under the demo's directory (``.sco/demo/dagster``),
so ``dagster dev`` opened afterwards (docs/demo.md) shows the demo's runs, materialisations, check results and
freshness, and its daemon goes on running the schedules and sensors against the stack the demo leaves up.

Every materialisation runs with the checks of the assets it selects (the freshness checks among them), as the
schedules' jobs do, but for the rankings' great-expectations checks (``GE_CHECKS``), which the daemon's first
scheduled ranking runs. The demo's attribution of its still-open hour runs the ledger functions directly (the
asset's partitions are whole hours); it is recorded as a runless materialisation of ``savings_attribution``
per hour, saying so."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["DAGSTER_YAML", "GE_CHECKS", "materialise", "open_instance", "record_attribution", "unpartitioned_keys"]

# sqlite storage under DAGSTER_HOME (Dagster's default), no telemetry
DAGSTER_YAML = "telemetry:\n  enabled: false\n"
# the great-expectations checks on the rankings: the demo leaves them to the daemon's first scheduled ranking run
# (importing great-expectations and building its context costs the demo up to a minute on a busy machine)
GE_CHECKS = ("rankings_cover_every_active_pool", "ranking_scores_in_range")


def open_instance(home: Path, fresh: bool = False) -> Any:
    """The Dagster instance stored in ``home`` (created with its ``dagster.yaml``; emptied first if ``fresh``)."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    if fresh and home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(DAGSTER_YAML)
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(home.resolve())))


def materialise(instance: Any, defs: Any, resources: Mapping[str, Any], keys: Iterable[str],
                skip_checks: Iterable[str] = ()) -> Any:
    """Materialise the unpartitioned assets named ``keys`` (as ``AssetKey.to_user_string``; a dbt multi-asset is
    selected by any of its keys) with the checks on them but those named in ``skip_checks``, in ``instance``;
    never raises on a failed step."""
    from dagster import materialize

    wanted, skipped = set(keys), set(skip_checks)
    assets = [a for a in (defs.assets or []) if getattr(a, "partitions_def", None) is None
              and {k.to_user_string() for k in a.keys} & wanted]
    checks = [c for c in (defs.asset_checks or []) if not {k.name for k in c.check_keys} <= skipped]
    return materialize([*assets, *checks], resources=dict(resources), instance=instance, selection=assets,
                       raise_on_error=False)


def record_attribution(instance: Any, hours: Sequence[datetime], until: datetime, workloads: int) -> None:
    """One runless ``savings_attribution`` materialisation per attributed hour (the hourly partition key)."""
    from dagster import AssetMaterialization, MetadataValue

    for hour in hours:
        instance.report_runless_asset_event(AssetMaterialization(
            asset_key="savings_attribution", partition=hour.strftime("%Y-%m-%d-%H:00"),
            description="attributed by the demo with the asset's ledger functions, up to the demo's end",
            metadata={"until": MetadataValue.timestamp(min(until, hour.replace(minute=59, second=59))),
                      "workloads": workloads, "source": "sco demo"}))


def unpartitioned_keys(defs: Any) -> list[str]:
    """The keys of every unpartitioned asset of the code location."""
    return sorted(k.to_user_string() for a in (defs.assets or []) if getattr(a, "partitions_def", None) is None
                  for k in a.keys)
