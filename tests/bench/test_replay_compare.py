"""bench.replay_compare's verdicts compare strategies on the seeds both have run, never a mean over other seeds."""

from __future__ import annotations

from bench.replay_compare import Run, _verdicts, common_seeds


def _run(seed: int, strategy: str, rate: float, worst: float) -> Run:
    return Run(seed, strategy, rate, 100, 0.5, 0.01, 20.0, 30.0, worst, "-", 1.0, 50.0, 56.0)


RUNS = [_run(1, "depth-first", 0.5, 40.0), _run(2, "depth-first", 3.0, 70.0), _run(2, "single-cheapest", 2.0, 60.0)]


def test_the_seeds_in_common_are_those_both_strategies_ran() -> None:
    assert common_seeds(RUNS, "depth-first", "single-cheapest") == [2]
    assert common_seeds(RUNS, "depth-first", "price-first") == []


def test_ours_is_compared_with_a_baseline_on_the_common_seeds_only() -> None:
    # over both of ours' seeds the mean (1.75 %/h) and the worst step (70 %) would be judged against seed 2 alone
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(RUNS)}
    assert verdicts["interruptions/h below single-cheapest"] == (False, "3.00 vs 2.00 %/h (ratio 1.50) on seed 2")
    assert verdicts["worst 5-min loss below single-cheapest"] == (False, "70 % vs 60 % on seed 2")
    assert not any("price-first" in label for label in verdicts)


def test_with_every_seed_in_common_the_comparison_reads_them_all() -> None:
    runs = [*RUNS, _run(1, "single-cheapest", 1.0, 100.0)]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs)}
    assert verdicts["interruptions/h below single-cheapest"] == (False, "1.75 vs 1.50 %/h (ratio 1.17) on seeds 1, 2")
    assert verdicts["worst 5-min loss below single-cheapest"] == (True, "70 % vs 100 % on seeds 1, 2")


def test_a_candidate_variant_of_ours_is_judged_against_the_baselines_on_its_own_seeds() -> None:
    runs = [*RUNS, _run(2, "depth-first-two-halls", 2.5, 50.0)]
    verdicts = {label: (ok, figure) for label, ok, figure in _verdicts(runs, "depth-first-two-halls")}
    assert verdicts["worst 5-min loss below single-cheapest"] == (True, "50 % vs 60 % on seed 2")
    assert verdicts["interruptions/h below single-cheapest"] == (False, "2.50 vs 2.00 %/h (ratio 1.25) on seed 2")


def test_a_candidate_is_judged_against_price_first_under_the_same_caps_when_that_ran() -> None:
    runs = [*RUNS, _run(2, "depth-first-two-halls", 2.5, 50.0), _run(2, "price-first", 2.6, 45.0),
            _run(2, "price-first-two-halls", 2.4, 55.0)]
    verdicts = {label: (ok, figure) for label, ok, figure
                in _verdicts(runs, "depth-first-two-halls", ("price-first-two-halls", "single-cheapest"))}
    assert verdicts["worst 5-min loss below price-first-two-halls"] == (True, "50 % vs 55 % on seed 2")
    assert verdicts["interruptions/h below price-first-two-halls"] == (False, "2.50 vs 2.40 %/h (ratio 1.04) on seed 2")
    assert not any(label.endswith("below price-first") for label in verdicts)
