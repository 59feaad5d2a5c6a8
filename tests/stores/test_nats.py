"""``stores.nats`` without a server: the server list of a cluster URL, the credential lifted out of it, and the
replica count a new stream gets."""

from __future__ import annotations

from types import SimpleNamespace
from urllib.parse import urlparse

from stores import nats as sco_nats
from stores.nats import _lift_credential


def test_a_comma_separated_url_is_every_server_and_one_url_is_a_list_of_one() -> None:
    assert sco_nats.server_list("nats://a:1, nats://b:2,") == ["nats://a:1", "nats://b:2"]
    assert sco_nats.server_list("nats://u:p@a:1") == ["nats://u:p@a:1"]


def test_one_credential_on_every_server_is_lifted_into_options_and_anything_else_is_left_alone() -> None:
    servers, options = _lift_credential(["nats://ingest:p%40ss@127.0.0.1:1", "nats://ingest:p%40ss@127.0.0.1:2"])
    assert servers == ["nats://127.0.0.1:1", "nats://127.0.0.1:2"]
    assert options == {"user": "ingest", "password": "p@ss"}
    mixed = ["nats://a:x@127.0.0.1:1", "nats://b:y@127.0.0.1:2"]
    assert _lift_credential(mixed) == (mixed, {})
    assert _lift_credential(["nats://a:x@127.0.0.1:1"]) == (["nats://a:x@127.0.0.1:1"], {})
    assert _lift_credential(["nats://tok@127.0.0.1:1", "nats://tok@127.0.0.1:2"])[1] == {}  # a token: as given


def test_a_new_stream_gets_three_replicas_in_a_cluster_of_three_known_from_its_info_or_the_given_urls() -> None:
    def client(info: dict[str, object], servers: list[str]) -> SimpleNamespace:
        return SimpleNamespace(_server_info=info, servers=[urlparse(s) for s in servers])

    three = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
    assert sco_nats.stream_replicas(client({"cluster": "sco", "connect_urls": three}, ["nats://127.0.0.1:1"])) == 3
    assert sco_nats.stream_replicas(client({"cluster": "sco", "connect_urls": three[:1]},
                                           [f"nats://{u}" for u in three])) == 3  # gossip not complete yet
    assert sco_nats.stream_replicas(client({"cluster": "sco", "connect_urls": three[:2]}, [])) == 1
    assert sco_nats.stream_replicas(client({"connect_urls": []}, [f"nats://{u}" for u in three])) == 1  # no cluster
