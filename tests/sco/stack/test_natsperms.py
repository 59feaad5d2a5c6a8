"""The consumer permissions: each named durable is its owner's alone, and nothing is allowed by omission."""

from __future__ import annotations

from pathlib import Path

from sco.stack import credentials as c
from sco.stack import natsperms
from stores import ingest
from stores import nats as sco_nats


def test_the_names_are_the_ones_the_stores_use() -> None:
    assert natsperms.EVENTS_STREAM == sco_nats.EVENTS_STREAM
    assert natsperms.INGEST_CONSUMER == ingest.CONSUMER


def test_every_user_but_the_ingest_is_denied_the_ingests_consumer_and_no_one_the_legacy_creation_subject() -> None:
    for name, perms in c.NATS_PERMISSIONS.items():
        if perms is None:
            continue
        denied = c.NATS_PUBLISH_DENY[name]
        assert (f"$JS.API.CONSUMER.*.SCO_EVENTS.{ingest.CONSUMER}" in denied) == (name != "ingest"), name
        assert "$JS.API.CONSUMER.CREATE.SCO_EVENTS" not in perms[0], name
        assert not [s for s in perms[0] if s in ("$JS.API.CONSUMER.>", "$JS.ACK.>", ">")], name


def test_an_empty_allow_list_is_written_as_a_deny_of_everything(tmp_path: Path) -> None:
    text = c.nats_config_text(4222, tmp_path, [c.NatsUser("quiet", "pw", (), ("sco.events.>",), ("x.>",))])
    line = next(line for line in text.splitlines() if '"quiet"' in line)
    assert 'publish: { deny: [">"] }' in line and 'subscribe: { allow: ["sco.events.>"] }' in line


def test_a_users_denies_follow_its_allows_in_the_configuration(tmp_path: Path) -> None:
    users = c.nats_users(c.generate())
    text = c.nats_config_text(4222, tmp_path, users)
    line = next(line for line in text.splitlines() if '"controller"' in line)
    assert f'deny: ["$JS.API.CONSUMER.*.SCO_EVENTS.{ingest.CONSUMER}"' in line
