"""The replay benches' shared recording: a simulated region's reclaim trace per seed, cached on disk, so
``replay_compare``, ``caps_bound`` and ``depth_signals`` replay the same waves without recording them twice."""

from __future__ import annotations

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
                   cache: Path | None) -> Any:
    """The region's reclaim trace for one seed, recorded once and kept in the replay cache under ``cache``
    (``controllers.replay.disk_cache``: keyed by the inputs and the code, refused unless private; None: its
    default directory)."""
    from controllers.replay import disk_cache
    from controllers.replay.from_region import cached_trace
    from controllers.simregion.config import RegionConfig

    began = time.monotonic()
    config = RegionConfig(seed=seed, reclaim_rate_pct_h=rate, price_demand=price_demand)
    trace = cached_trace(config, start, days, warmup, cache or disk_cache.cache_dir())
    log(f"seed {seed}: {len(trace.reclaims):,} waves recorded or read back in {time.monotonic() - began:.0f} s")
    return trace
