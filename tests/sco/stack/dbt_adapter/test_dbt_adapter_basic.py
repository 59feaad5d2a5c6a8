"""dbt-clickhouse's own adapter test suite (the ``dbt-tests-adapter`` package's base classes, unmodified)
against ``sco clickhouse serve``: the profile dbt-clickhouse's integration tests use — ``driver: http``, four
threads, ``custom_settings`` with ``distributed_ddl_task_timeout`` and ``input_format_skip_unknown_fields``,
``use_lw_deletes`` — as the writer of the front end's users file. Each class writes a dbt project, runs
``dbt seed``/``run``/``build``/``test`` in-process and checks the relations through the same connection.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import dbt.tests.fixtures.project as suite_fixtures
import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral

from testkit.clickhouse import WRITER, ClickHouseProcess

pytestmark = [pytest.mark.services, pytest.mark.slow,  # the base classes still use instance-method class fixtures
              pytest.mark.filterwarnings("ignore::pytest.PytestRemovedIn10Warning"),
              pytest.mark.filterwarnings("ignore::ResourceWarning"),  # dbt leaves its log file to the GC
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]
# the suite's fixtures, as its pytest plugin would register them (except logs_dir, below)
_SUITE_FIXTURES = ("adapter", "analyses", "clean_up_logging", "dbt_profile_data", "dbt_project_yml", "dependencies",
                   "dependencies_yml", "environment", "functions", "initialization", "macros", "models", "packages",
                   "packages_yml", "prefix", "profile_user", "profiles_config_update", "profiles_root",
                   "profiles_yml", "project", "project_config_update", "project_files", "project_root",
                   "project_setup", "properties", "seeds", "selectors", "selectors_yml", "shared_data_dir",
                   "snapshots", "test_config", "test_data_dir", "tests", "unique_schema")
globals().update({name: getattr(suite_fixtures, name) for name in _SUITE_FIXTURES})


@pytest.fixture(scope="class")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """dbt's log directory: a temporary one (the suite's own fixture writes into the checkout)."""
    path = str(tmp_path_factory.mktemp("dbt-logs"))
    os.environ["DBT_LOG_PATH"] = path
    yield path
    del os.environ["DBT_LOG_PATH"]


@pytest.fixture(scope="class")
def dbt_profile_target(clickhouse_server: ClickHouseProcess) -> dict[str, Any]:
    assert clickhouse_server.running is not None
    return {
        "type": "clickhouse", "threads": 4, "driver": "http", "host": "127.0.0.1",
        "port": clickhouse_server.running.port, "user": WRITER, "password": clickhouse_server.passwords[WRITER],
        "cluster": "", "database_engine": "", "cluster_mode": False, "secure": False, "check_exchange": False,
        "use_lw_deletes": True,
        "custom_settings": {"distributed_ddl_task_timeout": 300, "input_format_skip_unknown_fields": 1},
    }


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestIncremental(BaseIncremental):
    pass


class TestGenericTests(BaseGenericTests):
    pass
