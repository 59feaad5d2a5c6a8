"""pool_catalogue and pool_rankings fed by the provider's HTTP feed documents (a double serving the real paths
of the provider contract: /v1/catalogue, /v1/rate-card, /v1/quota, /v1/forward-capacity)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contracts.pools import Pool, PurchaseModel
from contracts.provider import ForwardCapacity, QuotaHeadroom, RateCard, RateCardEntry

from .helpers import Stack

NOW = datetime.now(UTC).replace(microsecond=0)
POOLS = [Pool(pool_id=f"rf-h{h}-std-large-rc", region="rf", hall=f"h{h}", aggregate=f"h{h}-agg-a", sku_family="std",
              size="large", vcpu=16, memory_gib=64, purchase_model=PurchaseModel.RECLAIMABLE,
              rate_eur_h=Decimal("0.20"), guaranteed_rate_eur_h=Decimal("0.64")) for h in (1, 2, 3)]
CARD = RateCard(region="rf", time=NOW, entries=tuple(
    RateCardEntry(pool_id=p.pool_id, rate_eur_h=Decimal("0.22"), guaranteed_rate_eur_h=Decimal("0.64"),
                  utilisation=0.5, free_instances=10) for p in POOLS))
# the calendar shows guaranteed tenants arriving in h1 within the half hour: 2 of its 10 free instances stay free
FORWARD = [ForwardCapacity(pool_id=p.pool_id, start=NOW, end=NOW + timedelta(minutes=30),
                           expected_free_instances=2 if p.hall == "h1" else 10, reclaim_probability=0.1)
           for p in POOLS]
QUOTA = QuotaHeadroom(project="sco", instances_limit=100, instances_used=75, vcpu_limit=1000, vcpu_used=100,
                      memory_mib_limit=1 << 20, memory_mib_used=0)


class _Feed(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        docs = {"/v1/catalogue": [p.model_dump(mode="json") for p in POOLS],
                "/v1/rate-card": CARD.model_dump(mode="json"), "/v1/quota": QUOTA.model_dump(mode="json"),
                "/v1/forward-capacity?horizon_s=1800": [f.model_dump(mode="json") for f in FORWARD]}
        body = json.dumps(docs[self.path]).encode() if self.path in docs else b'{"error": "NotFound"}'
        self.send_response(200 if self.path in docs else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def feed() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Feed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_catalogue_rate_card_and_quota_come_from_the_provider_feed(stack: Stack, feed: str) -> None:
    from dagster import materialize

    from orchestration.defs.catalogue.assets import pool_catalogue
    from orchestration.defs.rankings.assets import pool_rankings
    from orchestration.defs.rankings.checks import CHECKS
    from orchestration.resources import AnalyticsSettings, ProviderFeedResource

    resources = {**stack.resources(), "provider": ProviderFeedResource(base_url=feed),
                 "settings": AnalyticsSettings(region="rf", as_of=NOW.isoformat())}
    result = materialize([pool_catalogue, pool_rankings, *CHECKS], resources=resources,
                         selection=[pool_catalogue, pool_rankings], raise_on_error=False)
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["rankings_cover_every_active_pool"].passed
    ch = stack.ch()
    assert ch.rows("SELECT count() FROM provider_pools FINAL WHERE region = 'rf'") == [(3,)]
    ranked = ch.rows("SELECT pool, score, inputs FROM rankings WHERE region = 'rf' ORDER BY pool")
    assert [r[0] for r in ranked] == [p.pool_id for p in POOLS]
    for _, score, inputs in ranked:
        replay = json.loads(inputs)
        assert replay["quota_headroom"] == 0.25 and replay["rate_eur_h"] == 0.22
        assert 0.0 < score <= 0.25
    # ADR-07: the depth input is the provider's forward capacity where it shows less room than now
    shares = {pool: json.loads(inputs)["forward_share"] for pool, _, inputs in ranked}
    assert shares["rf-h1-std-large-rc"] < shares["rf-h2-std-large-rc"] == shares["rf-h3-std-large-rc"]
    assert ranked[0][1] < ranked[1][1]  # and h1 scores below the others
