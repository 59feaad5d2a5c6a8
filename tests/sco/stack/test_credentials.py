"""What `sco up` derives from its secrets: pure functions, no server."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from sco.stack import credentials as c


def test_the_credentials_file_is_created_0600_and_read_back_the_same(tmp_path: Path) -> None:
    first = c.load_or_create(tmp_path)
    assert stat.S_IMODE((tmp_path / c.CREDENTIALS_FILE).stat().st_mode) == 0o600
    assert c.load_or_create(tmp_path) == first
    assert len({*first.postgres.values(), *first.nats.values(), *first.clickhouse.values()}) == (
        len(first.postgres) + len(first.nats) + len(first.clickhouse))  # every secret its own


def test_an_agent_user_may_read_only_its_own_instance_and_publish_only_its_own_agent_events() -> None:
    user = c.agent_user("r1", "i-7", "pw")
    assert user.name == "agent.r1.i-7"
    assert user.subscribe == ("sco.notice.r1.i-7", "sco.advisory.r1.i-7", "_INBOX_i-7.>")
    assert user.publish is not None and "sco.events.r1.drained.i-7" in user.publish
    assert all(s.startswith("sco.events.r1.") and s.endswith(".i-7") for s in user.publish)
    assert "sco.events.r1.placed.i-7" not in user.publish  # a controller's kind


def test_every_component_subscribes_to_its_own_reply_inbox_and_to_no_one_elses() -> None:
    for name, perms in c.NATS_PERMISSIONS.items():
        if perms is None:
            continue
        inboxes = [s for s in perms[1] if s.startswith("_INBOX")]
        assert inboxes == [f"_INBOX_{name}.>"], (name, perms[1])


def test_only_the_region_user_may_publish_notices_and_advisories() -> None:
    may = {name: perms[0] for name, perms in c.NATS_PERMISSIONS.items() if perms is not None}
    assert [name for name, pub in may.items() if "sco.notice.>" in pub or "sco.advisory.>" in pub] == ["region"]
    assert not any(p.startswith(("$JS.API.STREAM.DELETE", "$JS.API.STREAM.PURGE", "$JS.API.>"))
                   for pub in may.values() for p in pub)


def test_the_nats_configuration_lists_each_user_with_its_permissions_and_quotes_every_value(tmp_path: Path) -> None:
    import bcrypt

    text = c.nats_config_text(4222, tmp_path, [c.NatsUser("admin", 'a"b'), c.agent_user("r1", "i-1", "x")])
    assert 'listen: "127.0.0.1:4222"' in text
    hashed = text.split('{ user: "admin", password: "', 1)[1].split('"', 1)[0]
    assert hashed.startswith("$2") and bcrypt.checkpw(b'a"b', hashed.encode())  # a hash, never the password
    assert 'a\\"b' not in text
    assert 'subscribe: { allow: ["sco.notice.r1.i-1", "sco.advisory.r1.i-1", "_INBOX_i-1.>"] }' in text
    assert "token" not in text


def test_component_urls_carry_each_components_own_user_and_skip_a_store_without_a_port() -> None:
    creds = c.generate()
    urls = c.component_urls(creds, {"postgres": 5432, "nats": 4222, "clickhouse": None})
    assert urls["controller"]["postgres"].startswith("postgresql://sco_controller:")
    assert urls["controller"]["nats"].startswith("nats://controller:")
    assert "clickhouse" not in urls["reports"] and "nats" not in urls["analytics"]
    assert c.redact_url(urls["ingest"]["nats"]) == "nats://ingest:***@127.0.0.1:4222"


def test_the_clickhouse_users_file_holds_hashes_never_passwords() -> None:
    creds = c.generate()
    doc = c.clickhouse_users_document(creds)
    text = json.dumps(doc)
    assert {u["name"] for u in doc["users"]} == set(c.CH_USERS)
    assert not any(secret in text for secret in creds.clickhouse.values())


def test_a_cluster_member_listens_for_routes_on_loopback_routes_to_the_others_and_checks_their_secret(
        tmp_path: Path) -> None:
    import bcrypt

    cluster = c.NatsCluster("sco", 6222, (6222, 6223, 6224), "route/secret")
    text = c.nats_config_text(4222, tmp_path, [c.NatsUser("admin", "pw")], "sco-6222", cluster=cluster)
    assert 'listen: "127.0.0.1:4222"' in text and 'listen: "127.0.0.1:6222"' in text
    assert 'server_name: "sco-6222"' in text and 'name: "sco"' in text
    routes = text.split("routes: ", 1)[1].split("\n", 1)[0]
    assert routes == ('["nats-route://route:route%2Fsecret@127.0.0.1:6223", '
                      '"nats-route://route:route%2Fsecret@127.0.0.1:6224"]')  # not to itself
    hashed = text.split('authorization { user: "route", password: "', 1)[1].split('"', 1)[0]
    assert bcrypt.checkpw(b"route/secret", hashed.encode())
    assert "cluster {" not in c.nats_config_text(4222, tmp_path, [c.NatsUser("admin", "pw")])


def test_a_cluster_gives_every_component_the_urls_of_all_members_and_the_route_secret_is_no_client_user() -> None:
    creds = c.generate()
    urls = c.component_urls(creds, {"nats": 4222}, [4222, 4223, 4224])
    assert urls["ingest"]["nats"].split(",") == [c.nats_url("ingest", creds.nats["ingest"], p)
                                                 for p in (4222, 4223, 4224)]
    assert c.NATS_ROUTE_USER in creds.nats
    assert c.NATS_ROUTE_USER not in {u.name for u in c.nats_users(creds)}
