"""Benchmark: the reclaim forecast judged as a forecaster's work, on days it was not fitted on.

    .venv/bin/python -m bench.forecast [--seed N] [--days 21] [--train-days 14] [--svg reliability.svg]

Per seed (1-4, plus ``--seed``), the simulated region (room-first, ~4 %/h, as the replay records it) runs in
virtual time for ``--days``; its rate cards, forward capacity and reclaims become the forecast's frames
(``orchestration.forecast.features``, the one feature definition). The model is fitted on the samples of the first
``--train-days`` (from day 1: the windows fill as the history grows) and scored on the later days, at each
horizon (1 h and the longest checkpoint interval the repository's contracts declare): log-loss and Brier score per
instance, beside three baselines measured in the same run on the same samples, each mapped to a probability by an
isotonic regression fitted on the training days: price rank alone, the last 24 h's reclaim rate, today's composite
scorer. Printed as ratios to the best baseline; PASS when the forecast is below every baseline on both scores, at
every horizon and seed. Exit 1 on FAIL, 2 when a figure cannot be computed. The reliability diagram (the 1 h
forecast, every seed's held-out samples) is written as SVG to ``--svg``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from testkit.forecast_history import START, simulated_history

SEEDS = (1, 2, 3, 4)


def declared_horizons() -> tuple[int, ...]:
    """1 h and the longest checkpoint interval the repository's contracts declare."""
    from contracts.compiler import check_repo
    from orchestration.forecast.model import horizons_for

    repo = Path(__file__).resolve().parents[1] / "deploy" / "contracts"
    return horizons_for([w.contract.checkpoint_interval_min for w in check_repo(repo).workloads])


def run_seed(seed: int, days: float, train_days: float, horizons: Sequence[int]) -> dict[str, Any]:
    """One seed: simulate, fit on the first days, score the rest. Returns the scores per horizon and the 1 h
    held-out forecasts (for the reliability diagram)."""
    import polars as pl

    from orchestration.forecast.evaluate import score_forecast
    from orchestration.forecast.features import feature_frame, labels
    from orchestration.forecast.model import fit

    cards, pools, reclaims = simulated_history(seed, days)
    frame = labels(feature_frame(cards, pools, reclaims), reclaims, horizons)
    split = START + timedelta(days=train_days)
    longest = timedelta(minutes=max(horizons))
    # a training sample's outcome must be known before the split: its horizon ends by then
    train = frame.filter(pl.col("time") + longest <= split)
    test = frame.filter(pl.col("time") >= split)
    model = fit(train, horizons)
    out: dict[str, Any] = {"seed": seed, "reclaims": len(reclaims), "train": len(train), "test": len(test),
                           "version": model.version, "scores": {}}
    for h in horizons:
        ours, baselines, _ = score_forecast(model, train, test, h)
        out["scores"][h] = (ours, baselines)
        if h == 60:
            out["p"], out["y"] = model.predict(test)[h], test[f"y_{h}"].to_numpy()
            out["w"] = test["instances"].to_numpy().astype(float)
    return out


def report(result: dict[str, Any]) -> bool:
    """Print one seed's table; True when the forecast beats every baseline on both scores at every horizon."""
    ok = True
    print(f"seed {result['seed']}: {result['reclaims']:,} reclaims; {result['train']:,} training samples, "
          f"{result['test']:,} held-out (pool x 5-min card); model {result['version']}")
    for h, (ours, baselines) in result["scores"].items():
        best_ll = min(b.log_loss for b in baselines)
        best_br = min(b.brier for b in baselines)
        print(f"  horizon {h} min          log-loss   x best   Brier       x best")
        for s in (ours, *baselines):
            print(f"    {s.name:<26} {s.log_loss:.5f}  {s.log_loss / best_ll:5.3f}   {s.brier:.6f}  "
                  f"{s.brier / best_br:5.3f}")
        passed = ours.log_loss < best_ll and ours.brier < best_br
        ok &= passed
        print(f"    {'PASS' if passed else 'FAIL'}: forecast below every baseline on both scores "
              f"(log-loss {ours.log_loss / best_ll:.3f}x, Brier {ours.brier / best_br:.3f}x the best baseline)")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.forecast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append", default=[], help="another seed beside 1-4")
    parser.add_argument("--only", type=int, action="append", default=[], help="only these seeds (quick runs)")
    parser.add_argument("--days", type=float, default=21.0)
    parser.add_argument("--train-days", type=float, default=14.0)
    parser.add_argument("--svg", type=Path, default=Path("forecast-reliability.svg"))
    args = parser.parse_args(argv)
    if not 1 <= args.train_days < args.days:
        print(f"FAIL: --train-days must lie in [1, --days); got {args.train_days} of {args.days}", file=sys.stderr)
        return 2
    import numpy as np

    from orchestration.forecast.evaluate import reliability_bins
    from reports.svg import reliability

    seeds = args.only or sorted({*SEEDS, *args.seed})
    horizons = declared_horizons()
    began, cpu = time.monotonic(), time.process_time()
    ok, held = True, []
    for seed in seeds:
        try:
            result = run_seed(seed, args.days, args.train_days, horizons)
        except ValueError as exc:
            print(f"FAIL: seed {seed}: cannot compute the scores: {exc}", file=sys.stderr)
            return 2
        ok &= report(result)
        held.append((result["p"], result["y"], result["w"]))
    p, y, w = (np.concatenate([h[k] for h in held]) for k in range(3))
    args.svg.write_text(reliability(reliability_bins(p, y, w), title="1 h reclaim forecast, held-out days"))
    print(f"reliability diagram (1 h, {len(seeds)} seeds' held-out samples): {args.svg}")
    print(f"wall {time.monotonic() - began:.0f} s, CPU {time.process_time() - cpu:.0f} s, "
          f"load {os.getloadavg()[0]:.1f}")
    print("PASS" if ok else "FAIL: the forecast is not below every baseline on both scores everywhere")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
