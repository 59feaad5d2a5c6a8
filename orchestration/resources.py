# mypy: disable-error-code="type-arg, unused-ignore"
"""Dagster resources on the shared store clients (``stores``): ClickHouse through clickhouse-connect,
PostgreSQL through psycopg, and the analytics settings (region, archive directory or bucket, the data clock).

A URL left empty resolves like every other SCO process: ``SCO_CLICKHOUSE_URL`` / ``SCO_POSTGRES_URL``, then
the stack file ``sco up`` wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from dagster import ConfigurableResource

__all__ = ["AnalyticsSettings", "BakeoffSettings", "ClickHouseResource", "PostgresResource", "ProviderFeedResource",
           "RgwResource"]


class ClickHouseResource(ConfigurableResource):  # type: ignore[misc]
    """ClickHouse (the embedded HTTP front end or a real server)."""

    url: str = ""

    def client(self) -> Any:
        """A new ClickHouse client for the configured URL (the caller closes it)."""
        from stores.clickhouse import client
        from stores.config import resolve_url

        return client(resolve_url("clickhouse", self.url or None, component="analytics"))

    def rows(self, sql: str, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """One query's result rows."""
        c = self.client()
        try:
            return [tuple(r) for r in c.query(sql, parameters=parameters or {}).result_rows]
        finally:
            c.close()

    def arrow(self, sql: str, parameters: dict[str, Any] | None = None) -> Any:
        """One query's result as an Arrow table (the ledger's instance spans and losses, ``range_frames``)."""
        c = self.client()
        try:
            return c.query_arrow(sql, parameters=parameters or {})
        finally:
            c.close()

    def command(self, sql: str, parameters: dict[str, Any] | None = None) -> None:
        """Run one statement."""
        c = self.client()
        try:
            c.command(sql, parameters=parameters or {})
        finally:
            c.close()

    def insert(self, table: str, rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> int:
        """Insert ``rows`` into ``table``; the number inserted."""
        if not rows:
            return 0
        c = self.client()
        try:
            c.insert(table, [list(r) for r in rows], column_names=list(columns))
        finally:
            c.close()
        return len(rows)

    def migrate(self) -> None:
        """Apply the ClickHouse migrations."""
        from stores.migrate import migrate_clickhouse

        c = self.client()
        try:
            migrate_clickhouse(c)
        finally:
            c.close()


class PostgresResource(ConfigurableResource):  # type: ignore[misc]
    """PostgreSQL (fleet state): where the controller reads what is in force."""

    url: str = ""

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A PostgreSQL connection for the duration of the block."""
        from stores.postgres import connect

        conn = connect(self.url or None, component="analytics")
        try:
            yield conn
        finally:
            conn.close()

    def migrate(self) -> None:
        """Apply the PostgreSQL migrations."""
        from stores.migrate import migrate_postgres
        from stores.postgres import connect

        conn = connect(self.url or None, autocommit=True, component="analytics")
        try:
            migrate_postgres(conn)  # a no-op without DDL when `sco up` has applied them (analytics may not create)
        finally:
            conn.close()


class AnalyticsSettings(ConfigurableResource):  # type: ignore[misc]
    """``as_of``: ISO time the analytics treat as now (empty: the latest event time, the data's own clock,
    so a replayed history and a live region are scored the same way). The finance archive goes to
    ``archive_url`` (``s3://bucket`` with Object Lock; endpoint and keys from ``SCO_ARCHIVE_ENDPOINT``,
    ``SCO_ARCHIVE_ACCESS_KEY``, ``SCO_ARCHIVE_SECRET_KEY``), else to the local ``archive_dir``;
    ``archive_correction`` names a correction archive of a month already archived."""

    region: str = "r1"
    as_of: str = ""
    archive_dir: str = ".sco/archive"
    archive_url: str = ""
    archive_retention_days: int = 7 * 365      # ADR-25: cost attribution is kept seven years
    archive_create_bucket: bool = False         # production: the bucket is created by the operator, with the lock
    archive_correction: str = ""
    dbt_docs_dir: str = ".sco/dbt-docs"        # where the finance_docs asset writes dbt's static docs site
    interruption_window_days: int = 30
    forecast_model_dir: str = ".sco/forecast"   # the reclaim forecast's fitted model, one file per region
    phi_window_days: int = 90
    orchestrator_eur_per_vcpu_h: str = "0.04"   # the orchestrator's footprint at the guaranteed rate card
    orchestrator_eur_per_gib_h: str = "0.005"

    def archive_target(self) -> Any:
        """The ``ArchiveTarget`` these settings name (an S3 bucket is checked for Object Lock first)."""
        import os

        from .archive_targets import target_for

        return target_for(self.archive_url, self.archive_dir, self.archive_retention_days, environ=os.environ,
                          create_bucket=self.archive_create_bucket)

    def data_now(self, ch: ClickHouseResource) -> datetime:
        """``now`` on the region's latest event time (the data's own clock)."""
        from .store import latest_event_time

        return self.now(latest_event_time(ch, self.region))

    def now(self, latest_event: datetime | None) -> datetime:
        """The analytics' now: ``as_of`` when set, else the latest event's time; raises without either."""
        if self.as_of:
            parsed = datetime.fromisoformat(self.as_of)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        if latest_event is not None:
            return latest_event if latest_event.tzinfo else latest_event.replace(tzinfo=UTC)
        raise ValueError("no events in ClickHouse and no as_of set: ingest events or set AnalyticsSettings.as_of")


class ProviderFeedResource(ConfigurableResource):  # type: ignore[misc]
    """The provider's HTTP feed documents (``/v1/catalogue``, ``/v1/rate-card``, ``/v1/quota``). Empty
    ``base_url``: the catalogue and rate cards are already in ClickHouse (a replayed pool history) and quota
    headroom counts as full."""

    base_url: str = ""
    timeout_s: float = 10.0

    def document(self, path: str) -> Any:
        """One JSON document of the provider's feed."""
        import json
        import urllib.request

        with urllib.request.urlopen(self.base_url.rstrip("/") + path, timeout=self.timeout_s) as resp:
            return json.loads(resp.read())

    def forward_free(self, horizon_s: int = 1800) -> dict[str, int]:
        """Expected free reclaimable instances per pool ``horizon_s`` ahead, from the provider's forward-capacity
        feed (Blazar's calendar, ADR-07/ADR-22); empty without a feed (the scorer then uses the free share now)."""
        if not self.base_url:
            return {}
        from contracts.provider import ForwardCapacity

        rows = self.document(f"/v1/forward-capacity?horizon_s={int(horizon_s)}")
        return {f.pool_id: f.expected_free_instances for f in (ForwardCapacity.model_validate(r) for r in rows)}

    def quota_headroom(self) -> float:
        """Share of the project's instance quota still free (1.0 without a feed or without a limit)."""
        if not self.base_url:
            return 1.0
        from contracts.provider import QuotaHeadroom

        quota = QuotaHeadroom.model_validate(self.document("/v1/quota"))
        if quota.instances_limit < 0:
            return 1.0
        return quota.instances_free / quota.instances_limit if quota.instances_limit else 0.0


class RgwResource(ConfigurableResource):  # type: ignore[misc]
    """Ceph RGW's Admin Ops API (checkpoint storage per workload, ``orchestration.storage``).

    ``endpoint`` empty: no RGW in this region (the asset writes nothing and says so). ``owners``: JSON object
    owner uid -> workload (null: not charged to a workload, e.g. the orchestrator's own archive bucket).
    ``eur_per_gib_month``: the storage rate card.
    """

    endpoint: str = ""
    access_key: str = ""
    secret_key: str = ""
    region: str = "default"
    owners: str = "{}"
    eur_per_gib_month: str = "0.02"

    def stats(self) -> Any:
        """The production adapter on this endpoint and identity."""
        from .storage import RgwAdminOps

        return RgwAdminOps(self.endpoint, self.access_key, self.secret_key, self.region)

    def owner_map(self) -> dict[str, str | None]:
        """``owners`` parsed."""
        import json

        doc = json.loads(self.owners or "{}")
        if not isinstance(doc, dict):
            raise ValueError(f"RgwResource.owners must be a JSON object of uid -> workload, got {self.owners!r}")
        return {str(k): (None if v is None else str(v)) for k, v in doc.items()}


class BakeoffSettings(ConfigurableResource):  # type: ignore[misc]
    """How each bake-off partition replays (``SCO_BAKEOFF_*``): ADR-03's month after a week of warm-up at ~4 %/h
    by default; ``revision`` names the code or contract revision the rows belong to."""

    days: float = 30.0
    warmup_days: float = 7.0
    units: int = 40
    rate_pct_h: float = 4.0
    revision: str = ""
    contracts_dir: str = ""
    cache_dir: str = ".sco/bakeoff-traces"

    def run_settings(self) -> Any:
        """These settings as ``orchestration.bakeoff.RunSettings``."""
        from .bakeoff import RunSettings

        return RunSettings(days=self.days, warmup_days=self.warmup_days, units=self.units,
                           rate_pct_h=self.rate_pct_h, revision=self.revision, contracts_dir=self.contracts_dir,
                           cache_dir=self.cache_dir)
