"""What the fleet-scale simulation measures (issue 18): each unit from its claim until our instances cover it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controllers.replay.fleet_figures import FleetFigures, _Latency

T0 = datetime(2026, 10, 1, 6, tzinfo=UTC)


def test_the_build_is_over_once_no_build_claim_waits_whatever_steady_or_replacement_units_wait() -> None:
    lat = _Latency(FleetFigures())
    lat.need("w1", T0, 48, replacement=False)
    lat.need("w2", T0, 10, replacement=False, steady=True)
    lat.need("w3", T0, 5, replacement=True)
    assert lat.building()
    lat.cover("w1", 8, T0 + timedelta(seconds=30))   # 40 of its 48 units held
    assert lat.building()
    lat.cover("w1", 0, T0 + timedelta(seconds=40))
    assert not lat.building() and lat.waiting["w2"] and lat.waiting["w3"]


def test_a_steady_claim_is_charged_from_its_claim_to_the_pass_that_covered_it_and_kept_for_the_traces() -> None:
    f = FleetFigures()
    lat = _Latency(f)
    lat.need("w1", T0, 10, replacement=False, steady=True)
    lat.cover("w1", 4, T0 + timedelta(seconds=7))
    lat.cover("w1", 0, T0 + timedelta(seconds=12))
    assert f.steady_s == [7.0] * 6 + [12.0] * 4 == f.placement_s
    assert lat.steady_served == [(7.0, "w1", T0, 6), (12.0, "w1", T0, 4)]
