from __future__ import annotations

import random

import numpy as np
import pytest

from orchestration.phi import GroupRules, indicator_matrix, phi_matrix, refine_groups


def test_phi_of_identical_opposite_and_independent_indicators() -> None:
    x = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], dtype=bool)
    phi, joint = phi_matrix(x)
    assert phi[0, 1] == pytest.approx(1.0)
    assert phi[0, 2] == pytest.approx(-1.0)
    assert phi[0, 3] == pytest.approx(0.0)
    assert joint[0, 1] == 2


def test_a_pool_never_reclaimed_has_phi_zero_not_nan() -> None:
    x = np.array([[1, 0, 1, 0], [0, 0, 0, 0]], dtype=bool)
    phi, _ = phi_matrix(x)
    assert phi[0, 1] == 0.0


def test_hand_computed_phi() -> None:
    # n11=2, n10=1, n01=1, n00=6 over 10 windows: phi = (2*6 - 1*1) / sqrt(3*7*3*7) = 11/21
    a = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    b = [1, 1, 0, 1, 0, 0, 0, 0, 0, 0]
    phi, _ = phi_matrix(np.array([a, b], dtype=bool))
    assert phi[0, 1] == pytest.approx(11 / 21)


def _history(windows: int = 12960, seed: int = 3) -> tuple[list[str], list[tuple[str, int]]]:
    """Pools a and b are reclaimed together (one cause); c and d independently, at the same rate."""
    rng = random.Random(seed)
    hits: list[tuple[str, int]] = []
    for w in range(windows):
        if rng.random() < 0.05:
            hits += [("a", w), ("b", w)] if rng.random() < 0.9 else [("a", w)]
        for p in ("c", "d"):
            if rng.random() < 0.05:
                hits.append((p, w))
    return ["a", "b", "c", "d"], hits


def test_pools_reclaimed_together_merge_across_topology_groups_and_independent_ones_stay_apart() -> None:
    pools, hits = _history()
    x = indicator_matrix(pools, hits, 12960)
    groups = refine_groups(pools, {p: f"agg-{p}" for p in pools}, x)
    assert groups.group_of["a"] == groups.group_of["b"]
    assert len({groups.group_of["a"], groups.group_of["c"], groups.group_of["d"]}) == 3
    merges = [c for c in groups.changes if c.kind == "merge"]
    assert len(merges) == 1 and set(merges[0].pools) == {"a", "b"}
    assert merges[0].phi > 0.8 and merges[0].joint_windows > 400
    assert groups.max_phi["a"] == groups.max_phi["b"] > 0.8


def test_merges_join_aggregates_up_to_their_hall_and_never_across_halls() -> None:
    pools, hits = _history()  # a and b reclaimed together (phi > 0.8)
    x = indicator_matrix(pools, hits, 12960)
    same_hall = refine_groups(pools, {p: f"agg-{p}" for p in pools}, x, halls=dict.fromkeys(pools, "h1"))
    assert same_hall.group_of["a"] == same_hall.group_of["b"]  # two aggregates of h1: one group, the hall's
    apart = refine_groups(pools, {p: f"agg-{p}" for p in pools}, x, halls={"a": "h1", "b": "h2", "c": "h1", "d": "h2"})
    assert apart.group_of["a"] != apart.group_of["b"]
    (refused,) = [c for c in apart.changes if c.kind == "cross-hall"]
    assert set(refused.pools) == {"a", "b"} and refused.phi > 0.8 and refused.joint_windows > 400
    assert not [c for c in apart.changes if c.kind == "merge"]


def test_a_pool_independent_of_its_aggregate_is_split_out_with_its_evidence() -> None:
    pools, hits = _history()
    x = indicator_matrix(pools, hits, 12960)
    # the catalogue puts c and d in one aggregate, but they never reclaim together
    groups = refine_groups(pools, {"a": "agg-1", "b": "agg-1", "c": "agg-2", "d": "agg-2"}, x,
                           GroupRules(split_phi=0.05))
    assert groups.group_of["c"] != groups.group_of["d"]
    assert groups.group_of["a"] == groups.group_of["b"] == "agg-1"
    splits = {c.pools[0] for c in groups.changes if c.kind == "split"}
    assert splits == {"c", "d"}


def test_a_thin_sample_never_splits_a_topology_group() -> None:
    x = indicator_matrix(["c", "d"], [("c", 1), ("d", 5)], 12960)
    groups = refine_groups(["c", "d"], {"c": "agg", "d": "agg"}, x)
    assert groups.group_of == {"c": "agg", "d": "agg"}
    assert groups.changes == ()


def test_hits_outside_the_window_or_for_unknown_pools_are_ignored() -> None:
    x = indicator_matrix(["a"], [("a", -1), ("a", 10), ("zz", 3), ("a", 2)], 10)
    assert x.tolist() == [[False, False, True, False, False, False, False, False, False, False]]
