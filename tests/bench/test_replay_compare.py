"""bench.replay_compare's verdicts compare strategies on the seeds both have run, never a mean over other seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.replay_compare import Run, _runs_from, _verdicts, common_seeds


def _run(seed: int, strategy: str, rate: float, worst: float) -> Run:
    return Run(seed, strategy, rate, 100, 0.5, 0.01, 20.0, 30.0, worst, "-", 1.0, 50.0, 56.0)


RUNS = [_run(1, "depth-first", 0.5, 40.0), _run(2, "depth-first", 3.0, 70.0), _run(2, "single-cheapest", 2.0, 60.0)]


def test_the_seeds_in_common_are_those_both_strategies_ran() -> None:
    assert common_seeds(RUNS, "depth-first", "single-cheapest") == [2]
    assert common_seeds(RUNS, "depth-first", "price-first") == []


def test_ours_is_compared_with_a_baseline_on_the_common_seeds_only() -> None:
    # over both of ours' seeds the mean (1.75 %/h) and the worst step (70 %) would be judged against seed 2 alone
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(RUNS, "depth-first")}
    assert verdicts["interruptions/h below single-cheapest"] == (False, "3.00 vs 2.00 %/h (ratio 1.50) on seed 2")
    assert verdicts["worst 5-min loss below single-cheapest"] == (False, "70 % vs 60 % on seed 2")
    assert not any("price-first" in label for label in verdicts)


def test_with_every_seed_in_common_the_comparison_reads_them_all() -> None:
    runs = [*RUNS, _run(1, "single-cheapest", 1.0, 100.0)]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs, "depth-first")}
    assert verdicts["interruptions/h below single-cheapest"] == (False, "1.75 vs 1.50 %/h (ratio 1.17) on seeds 1, 2")
    assert verdicts["worst 5-min loss below single-cheapest"] == (True, "70 % vs 100 % on seeds 1, 2")


def _net(seed: int, strategy: str, rate: float, net: float, failing: tuple[str, ...] = ()) -> Run:
    return Run(seed, strategy, rate, 100, 0.5, 0.01, net - 10, net, 40.0, "-", 1.0, 50.0, 56.0,
               {"ceiling": 56.0, "net": net}, list(failing))


@pytest.mark.parametrize(("ours", "gap", "fewer", "above_45"), [
    # seeds 1, 2, 11: +3.0 points on the mean, fewer interruptions on every seed, mean net 45.0 %
    ([(1, 1.0, 44.0), (2, 1.0, 46.0), (11, 1.0, 45.0)], (True, "+3.0 points on seeds 1, 2, 11"), True, True),
    # one seed interrupted more: the every-seed rule fails though the mean is lower
    ([(1, 1.0, 44.0), (2, 2.5, 46.0), (11, 0.5, 45.0)], (True, "+3.0 points on seeds 1, 2, 11"), False, True),
    ([(1, 1.0, 43.0), (2, 1.0, 45.0), (11, 1.0, 44.9)], (False, "+2.3 points on seeds 1, 2, 11"), True, False),
])
def test_ours_is_judged_against_price_first_on_net_by_three_points_and_on_interruptions_on_every_seed(
        ours: list[tuple[int, float, float]], gap: tuple[bool, str], fewer: bool, above_45: bool) -> None:
    runs = [*(_net(s, "expected-cost", r, n) for s, r, n in ours),
            *(_net(s, "price-first", 2.0, n) for s, n in ((1, 41.0), (2, 43.0), (11, 42.0)))]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs)}
    assert verdicts["net saving (planning) ≥ 3 points above price-first, mean"] == gap
    assert verdicts["interruptions/h below price-first on every seed"][0] is fewer
    assert verdicts["mean net saving ≥ 45 % (planning rates, 80 % of the ceiling)"][0] is above_45
    assert verdicts["every workload within its declared tolerance and wasted-work budget (ours, every seed)"] == (
        True, "all within")


def test_a_workload_outside_its_contract_on_any_seed_fails_ours_and_is_named() -> None:
    runs = [_net(1, "expected-cost", 1.0, 45.0, ("search-api-frontend",)), _net(2, "expected-cost", 1.0, 45.0)]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs)}
    assert verdicts["every workload within its declared tolerance and wasted-work budget (ours, every seed)"] == (
        False, "search-api-frontend")


def test_a_candidate_variant_of_ours_is_judged_against_the_baselines_on_its_own_seeds() -> None:
    runs = [*RUNS, _run(2, "depth-first-three-halls", 2.5, 50.0)]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs, "depth-first-three-halls")}
    assert verdicts["worst 5-min loss below single-cheapest"] == (True, "50 % vs 60 % on seed 2")
    assert verdicts["interruptions/h below single-cheapest"] == (False, "2.50 vs 2.00 %/h (ratio 1.25) on seed 2")


def test_a_candidate_is_judged_against_price_first_under_the_same_caps_when_that_ran() -> None:
    runs = [*RUNS, _run(2, "depth-first-three-halls", 2.5, 50.0), _run(2, "price-first", 2.6, 45.0),
            _run(2, "price-first-three-halls", 2.4, 55.0)]
    verdicts = {label: (ok, figure) for label, ok, figure
                in _verdicts(runs, "depth-first-three-halls", ("price-first-three-halls", "single-cheapest"))}
    assert verdicts["worst 5-min loss below price-first-three-halls"] == (True, "50 % vs 55 % on seed 2")
    assert verdicts["interruptions/h below price-first-three-halls"] == (
        False, "2.50 vs 2.40 %/h (ratio 1.04) on seed 2")
    assert not any(label.endswith("below price-first") for label in verdicts)


def _line(r: Run) -> str:
    return f"[00:00:00] seed {r.seed} {r.strategy} run: {json.dumps(r.__dict__)}"


def test_a_relabel_line_renames_the_runs_above_it_at_once_and_not_those_below(tmp_path: Path) -> None:
    log = tmp_path / "months.log"
    log.write_text("\n".join([
        _line(_run(1, "depth-first", 1.5, 65.0)), _line(_run(1, "depth-first-two-halls", 1.4, 55.0)),
        "# relabel: depth-first -> depth-first-three-halls, depth-first-two-halls -> depth-first",
        _line(_run(2, "depth-first", 1.6, 45.0))]))
    runs = {(r.seed, r.strategy): r.worst_step_pct for r in _runs_from([log])}
    assert runs == {(1, "depth-first-three-halls"): 65.0, (1, "depth-first"): 55.0, (2, "depth-first"): 45.0}


@pytest.mark.parametrize(("line", "error"), [
    ("# relabel: depth-first depth-first-three-halls", "a relabel line reads 'old -> new, ...'"),
    ("# relabel: depth-first-two-halls -> depth-first", "seed 1 two runs named 'depth-first'"),
])
def test_a_relabel_line_that_is_malformed_or_merges_two_runs_is_refused_with_its_line(
        tmp_path: Path, line: str, error: str) -> None:
    log = tmp_path / "months.log"
    log.write_text("\n".join([_line(_run(1, "depth-first", 1.5, 65.0)),
                              _line(_run(1, "depth-first-two-halls", 1.4, 55.0)), line]))
    with pytest.raises(ValueError, match=f"months.log:3: .*{error}"):
        _runs_from([log])
