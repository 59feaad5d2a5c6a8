"""Kept for the importers outside tests/support (bench/, tests/orchestration): the server classes live in
tests/support/{nats,postgres,clickhouse}.py now; import them from there."""

from tests.support.clickhouse import ClickHouseProcess
from tests.support.nats import NatsProcess
from tests.support.postgres import PostgresProcess

__all__ = ["ClickHouseProcess", "NatsProcess", "PostgresProcess"]
