"""The controller's feed of its own bundle from the distributor (issue 16): real bundles compiled and signed by
``sco contracts compile``'s ``publish``, served by the real distributor over HTTP. A newer generation is taken
(then 304s); a forged one, a governed change without the governance signature, an older generation and another
partition's bundle are refused with their codes and the held bundle stays; files failing the rule are reported
only when read twice unchanged (a half-published set is not a refusal), and then once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from contracts.bundle import publish
from contracts.bundle_verify import BundleError, VerifiedBundle, verify_bundle_bytes
from contracts.signing import KeyPair, generate_keypair, load_private_key, sign_blob
from distributor import CONTROLLER_FILES, ControllerBundleFeed, SignedBundle, accept
from testkit.builders import base
from tests.contracts.helpers import compile_doc
from tests.distributor.test_server import Running

PARTITION = "r1/slurm-hpc"
JSON, SIG, GOV = CONTROLLER_FILES


def etl(**fields: Any) -> dict[str, Any]:
    """A T2 workload: it has a fallback spend cap and an approver, both governed fields (ADR-30)."""
    return base("T2", workload="etl", partition=PARTITION, resources={"vcpu": 4, "memory_gib": 16}, **fields)


def train(partition: str = PARTITION) -> dict[str, Any]:
    """A T3 workload: no governed field set, so adding it is a routine change."""
    return base("T3", workload="train", partition=partition, resources={"vcpu": 4, "memory_gib": 16})


@dataclass
class Publisher:
    """``sco contracts compile --out`` in a directory of its own: each ``compile`` is the next generation."""

    root: Path
    signing: KeyPair
    governance: KeyPair

    def compile(self, *docs: dict[str, Any], partition: str = PARTITION) -> SignedBundle:
        compiled = []
        for doc in docs:
            w, findings = compile_doc(doc)
            assert w is not None, findings
            compiled.append(w)
        publish(compiled, self.root, load_private_key(self.signing.private_pem), datetime.now(UTC),
                load_private_key(self.governance.private_pem))
        d = self.root / partition
        gov = d / GOV
        return SignedBundle((d / JSON).read_bytes(), (d / SIG).read_bytes(),
                            gov.read_bytes() if gov.exists() else None)

    def verified(self, b: SignedBundle) -> VerifiedBundle:
        return verify_bundle_bytes(b.raw, b.signature, self.signing.public_pem, b.governance_signature,
                                   self.governance.public_pem)


def serve(root: Path, b: SignedBundle, partition: str = PARTITION) -> None:
    """What the distributor serves for the partition: exactly these files (a missing governance signature is
    absent, as the distributor would serve a directory without it)."""
    d = root / partition
    d.mkdir(parents=True, exist_ok=True)
    for name, data in ((JSON, b.raw), (SIG, b.signature), (GOV, b.governance_signature)):
        if data is None:
            (d / name).unlink(missing_ok=True)
        else:
            (d / name).write_bytes(data)


def forged(b: SignedBundle) -> SignedBundle:
    """The same bytes signed by a key that is not the publisher's."""
    return SignedBundle(b.raw, sign_blob(b.raw, load_private_key(generate_keypair().private_pem)) + b"\n",
                        b.governance_signature)


@pytest.fixture
def pub(tmp_path: Path) -> Publisher:
    return Publisher(tmp_path / "compiled", generate_keypair(), generate_keypair())


def _refused(pub: Publisher, held: SignedBundle, offered: SignedBundle, governance: bool = True) -> BundleError:
    with pytest.raises(BundleError) as caught:
        accept(offered, pub.verified(held), pub.signing.public_pem,
               pub.governance.public_pem if governance else None, "the served bundle")
    return caught.value


def test_a_newer_routine_generation_follows_the_held_one_and_a_governed_one_needs_the_second_signature(
        pub: Publisher) -> None:
    g1 = pub.compile(etl())
    g2 = pub.compile(etl(), train())                                          # routine: a T3 workload added
    g3 = pub.compile(etl(fallback={"spend_cap_24h_eur": 250, "approver": "budget@example.org"}), train())
    assert g2.governance_signature is None and g3.governance_signature is not None
    taken = accept(g2, pub.verified(g1), pub.signing.public_pem, pub.governance.public_pem, "g2")
    assert taken.generation == 2 and not taken.governance_verified
    governed = accept(g3, pub.verified(g2), pub.signing.public_pem, pub.governance.public_pem, "g3")
    assert governed.generation == 3 and governed.governance_verified
    same = accept(g3, pub.verified(g3), pub.signing.public_pem, pub.governance.public_pem, "g3 again")
    assert same.raw == g3.raw, "the held bundle served again is no change, not a refusal"


@pytest.mark.parametrize(("case", "code", "words"), [
    ("forged", "BND001", "signature"),
    ("governed-unsigned", "BND004", "no governance signature"),
    ("governed-no-key", "BND004", "--governance-key"),
    ("older", "BND002", "older than the previous"),
    ("other-partition", "BND003", "partition"),
    ("fork", "BND002", "other content"),
])
def test_each_bad_successor_is_refused_with_its_code(pub: Publisher, tmp_path: Path, case: str, code: str,
                                                     words: str) -> None:
    g1 = pub.compile(etl())
    g2 = pub.compile(etl(), train())
    governance = case != "governed-no-key"
    if case == "forged":
        held, offered = g1, forged(g2)
    elif case in ("governed-unsigned", "governed-no-key"):
        g3 = pub.compile(etl(fallback={"spend_cap_24h_eur": 250, "approver": "budget@example.org"}), train())
        held, offered = g2, SignedBundle(g3.raw, g3.signature, None if case == "governed-unsigned" else
                                         g3.governance_signature)
    elif case == "older":
        held, offered = g2, g1
    elif case == "other-partition":
        other = Publisher(tmp_path / "other", pub.signing, pub.governance)
        held, offered = g1, other.compile(train("r1/k8s-batch"), partition="r1/k8s-batch")
    else:  # the same generation number compiled elsewhere with other content
        elsewhere = Publisher(tmp_path / "fork", pub.signing, pub.governance)
        elsewhere.compile(etl())
        held, offered = g2, elsewhere.compile(etl(), train(), base("T3", workload="extra", partition=PARTITION,
                                                                   resources={"vcpu": 2, "memory_gib": 8}))
    error = _refused(pub, held, offered, governance)
    assert error.code == code and words in error.message, error.message
    assert "the served bundle" in error.message, "the refusal names where the bundle came from"


@pytest.fixture
def dist(tmp_path: Path) -> Iterator[tuple[Running, Path]]:
    root = tmp_path / "dist"
    root.mkdir()
    running = Running(root, [datetime.now(UTC)])
    yield running, root
    running.close()


def feed(running: Running, pub: Publisher, held: SignedBundle, token: str = "ctl-token") -> ControllerBundleFeed:
    return ControllerBundleFeed(running.url, PARTITION, pub.signing.public_pem, pub.governance.public_pem,
                                f"Bearer {token}", pub.verified(held))


def test_over_http_a_newer_generation_is_taken_then_304_and_a_governed_one_comes_with_its_signature(
        pub: Publisher, dist: tuple[Running, Path]) -> None:
    running, root = dist
    g1 = pub.compile(etl())
    serve(root, g1)
    f = feed(running, pub, g1)
    assert f.poll().taken is None and f.held.generation == 1, "the held bundle served: nothing to take"
    g2 = pub.compile(etl(), train())
    serve(root, g2)
    polled = f.poll()
    assert polled.taken is not None and polled.taken.generation == 2 and f.held.raw == g2.raw
    assert f.poll().taken is None and running.server.responses[304] >= 1
    g3 = pub.compile(etl(fallback={"spend_cap_24h_eur": 250, "approver": "budget@example.org"}), train())
    serve(root, g3)
    got = f.poll().taken
    assert got is not None and got.generation == 3 and got.governance_verified and not f.refused


def test_over_http_a_refused_bundle_is_reported_once_the_held_one_stays_and_a_late_signature_is_judged_again(
        pub: Publisher, dist: tuple[Running, Path]) -> None:
    running, root = dist
    g1 = pub.compile(etl())
    g2 = pub.compile(etl(fallback={"spend_cap_24h_eur": 250, "approver": "budget@example.org"}))
    serve(root, SignedBundle(g2.raw, g2.signature, None))   # the governance signature not (yet) published
    f = feed(running, pub, g1)
    assert f.poll().refused is None and f.suspect and not f.refused, "first read: judged again before refusing"
    first = f.poll()
    assert first.refused is not None and first.refused.code == "BND004" and first.offered_generation == 2
    assert f.poll().refused is None and f.refused == {"BND004": 1}, "the same files are not refused twice"
    assert f.held.raw == g1.raw
    serve(root, g2)                                          # the governance group signed it
    later = f.poll()
    assert later.taken is not None and later.taken.generation == 2 and f.held.raw == g2.raw
    serve(root, g1)
    f.poll()
    older = f.poll()
    assert older.refused is not None and older.refused.code == "BND002" and f.held.raw == g2.raw


def test_over_http_a_half_published_set_is_not_a_refusal_when_the_next_read_is_whole(
        pub: Publisher, dist: tuple[Running, Path]) -> None:
    running, root = dist
    g1 = pub.compile(etl())
    g2 = pub.compile(etl(), train())
    serve(root, g2)
    f = feed(running, pub, g1)
    g3 = pub.compile(etl(), train(), base("T3", workload="extra", partition=PARTITION,
                                          resources={"vcpu": 2, "memory_gib": 8}))
    serve(root, SignedBundle(g2.raw, g3.signature, None))   # publish wrote generation 3's .sig, not yet the bundle
    torn = f.poll()
    assert torn.refused is None and torn.taken is None and "BND001" in f.last_error and f.suspect
    serve(root, g3)                                           # the rename landed
    whole = f.poll()
    assert whole.taken is not None and whole.taken.generation == 3 and not f.refused and not f.suspect


def test_over_http_an_admit_that_refuses_keeps_the_held_bundle(pub: Publisher, dist: tuple[Running, Path]) -> None:
    running, root = dist
    g1 = pub.compile(etl())
    serve(root, pub.compile(etl(), train()))
    f = feed(running, pub, g1)
    polled = f.poll(lambda payload, where: BundleError(f"{where} is older than the chain in PostgreSQL",
                                                       code="BND002"))
    assert polled.refused is not None and polled.refused.code == "BND002" and f.held.raw == g1.raw


def test_without_the_controller_credential_nothing_is_taken(pub: Publisher, dist: tuple[Running, Path]) -> None:
    running, root = dist
    g1 = pub.compile(etl())
    serve(root, pub.compile(etl(), train()))
    f = feed(running, pub, g1, token="not-it")
    polled = f.poll()
    assert polled.taken is None and polled.refused is None and "401" in polled.error and f.held.raw == g1.raw
