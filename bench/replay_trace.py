"""The replay benches' shared recording: a simulated region's reclaim trace per seed, cached on disk, so
``replay_compare``, ``caps_bound`` and ``depth_signals`` replay the same waves without recording them twice."""

from __future__ import annotations

import os
import pickle
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["log", "recorded_trace"]


def log(msg: str) -> None:
    """A progress line on stderr with the wall-clock time."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def recorded_trace(seed: int, days: float, warmup: float, start: datetime, rate: float, price_demand: float,
                   cache: Path) -> Any:
    """The region's reclaim trace for one seed, recorded once and kept as a pickle under ``cache``."""
    from controllers.replay.from_region import trace_from_region
    from controllers.simregion.config import RegionConfig

    name = f"trace-s{seed}-d{days:g}-w{warmup:g}-{start:%Y%m%d}-r{rate:g}-p{price_demand:g}.pkl"
    path = cache / name
    if path.exists():
        return pickle.loads(path.read_bytes())
    began = time.monotonic()
    log(f"seed {seed}: recording {days:g}+{warmup:g} days ({rate:g} %/h, price_demand {price_demand:g})")
    config = RegionConfig(seed=seed, reclaim_rate_pct_h=rate, price_demand=price_demand)
    trace = trace_from_region(config, start, days, warmup)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(trace))
    tmp.replace(path)
    log(f"seed {seed}: {len(trace.reclaims):,} waves recorded in {time.monotonic() - began:.0f} s")
    return trace
