"""``stores.clickhouse``: the credentials of an ``http://USER:PASSWORD@host:port`` URL reach clickhouse-connect
(percent-decoded), and a client built from the URL authenticates against the front end."""

from __future__ import annotations

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from orchestration.finance_models import dbt_env, dbt_vars
from stores import clickhouse
from testkit.clickhouse import READER, WRITER, ClickHouseProcess


def test_the_url_credentials_become_client_username_and_password() -> None:
    kw = clickhouse.client_kwargs("http://ingest:p%40ss%3Aw0rd@127.0.0.1:8124/sco")
    assert kw == {"host": "127.0.0.1", "interface": "http", "port": 8124, "username": "ingest",
                  "password": "p@ss:w0rd", "database": "sco"}
    assert "username" not in clickhouse.client_kwargs("http://127.0.0.1:8123")


def test_dbt_gets_the_credentials_in_its_environment_and_never_on_its_command_line() -> None:
    url = "http://analytics:s3cret@127.0.0.1:8124/?database=fin"
    env = dbt_env(url)
    assert (env["SCO_DBT_CLICKHOUSE_USER"], env["SCO_DBT_CLICKHOUSE_PASSWORD"]) == ("analytics", "s3cret")
    assert "s3cret" not in repr(dbt_vars(url)) and dbt_vars(url)["sco_clickhouse_database"] == "fin"


def test_a_client_from_the_url_authenticates_and_a_wrong_password_is_refused(
        clickhouse_server: ClickHouseProcess) -> None:
    for user in (WRITER, READER):
        client = clickhouse.client(clickhouse_server.url_for(user))
        try:
            assert client.query("SELECT 1").result_rows == [(1,)]
        finally:
            client.close()
    with pytest.raises(DatabaseError, match="AUTHENTICATION_FAILED"):
        clickhouse.client(clickhouse_server.base_url.replace("http://", f"http://{READER}:nope@"))


def test_the_dbt_process_environment_carries_the_credentials_only_while_it_is_started(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from orchestration.finance_models import dbt_credentials

    monkeypatch.setenv("SCO_DBT_CLICKHOUSE_USER", "before")
    monkeypatch.delenv("SCO_DBT_CLICKHOUSE_PASSWORD", raising=False)
    with dbt_credentials("http://analytics:s3cret@127.0.0.1:8124"):
        assert (os.environ["SCO_DBT_CLICKHOUSE_USER"], os.environ["SCO_DBT_CLICKHOUSE_PASSWORD"]) == (
            "analytics", "s3cret")
    assert os.environ["SCO_DBT_CLICKHOUSE_USER"] == "before" and "SCO_DBT_CLICKHOUSE_PASSWORD" not in os.environ
