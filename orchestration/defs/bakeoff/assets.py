"""``strategy_month``: one seed × strategy replayed through the production controller, as a partition. The run
launcher decides where a partition runs: the multiprocess executor locally, one pod per run with the
``K8sRunLauncher`` of deploy/helm/dagster-values.yaml — the cluster fans the bake-off out."""

from datetime import UTC, datetime

from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
)

from orchestration.bakeoff import COLUMNS, SEEDS, STRATEGIES, row, run_partition
from orchestration.resources import BakeoffSettings, ClickHouseResource

__all__ = ["PARTITIONS", "bakeoff_job", "strategy_month"]

PARTITIONS = MultiPartitionsDefinition({"seed": StaticPartitionsDefinition(list(SEEDS)),
                                        "strategy": StaticPartitionsDefinition(list(STRATEGIES))})


@asset(partitions_def=PARTITIONS, group_name="bakeoff",
       description="One strategy-month through the production controller (`sco bakeoff run`), stored in "
                   "ClickHouse strategy_months; dbt's fct_strategy_comparison reads every partition.")
def strategy_month(context: AssetExecutionContext, clickhouse: ClickHouseResource,
                   bakeoff: BakeoffSettings) -> MaterializeResult:  # type: ignore[type-arg]
    """Run the partition's seed × strategy in its own process and store its record."""
    key = context.partition_key
    assert isinstance(key, MultiPartitionKey)
    seed, strategy = key.keys_by_dimension["seed"], key.keys_by_dimension["strategy"]
    record = run_partition(seed, strategy, bakeoff.run_settings(), log=context.log)
    clickhouse.insert("strategy_months", [row(record, datetime.now(UTC))], COLUMNS)
    return MaterializeResult(metadata={
        "interruptions_pct_h": record.interruptions_pct_h, "net_planning_pct": record.net_planning_pct,
        "net_pct": record.net_pct, "shortfall_pct": record.shortfall_pct, "wasted_pct": record.wasted_pct,
        "worst_step_pct": record.worst_step_pct, "seconds": record.seconds, "days": record.days})


bakeoff_job = define_asset_job("bakeoff", selection=[strategy_month],
                               description="The bake-off: run every partition (a backfill), then the daily "
                                           "finance run (or `dbt build -s fct_strategy_comparison`) tabulates it.")
