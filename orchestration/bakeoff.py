"""The placement bake-off as data: run one partition (seed × strategy) as its own process — the ``sco bakeoff
run`` command of the installed product, so a partition runs wherever the run launcher puts it (a pod with the
``K8sRunLauncher``, a subprocess locally) — and store its ``StrategyMonth`` in ClickHouse. No Dagster here
(``orchestration.defs.bakeoff`` wires it); no controller import either: the command is the boundary.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from contracts.bakeoff import WATERFALL_POINTS, StrategyMonth, parse_strategy_month

from .errors import BakeoffError

__all__ = ["COLUMNS", "SEEDS", "STRATEGIES", "RunSettings", "row", "run_partition", "sco_executable"]

SEEDS = ("1", "2", "3", "4")
# ours first (expected cost within each contract's tolerance), then the baselines under the same caps
STRATEGIES = ("expected-cost", "depth-first", "price-first", "single-cheapest")
COLUMNS = ("revision", "seed", "strategy", "days", "warmup_days", "interruptions_pct_h", "interruptions",
           "wasted_pct", "shortfall_pct", "shortfall_wait_pct", "net_pct", "net_planning_pct", "ceiling_pct",
           "worst_step_pct", "worst_workload", "seconds", *WATERFALL_POINTS.values(), "achieved_pts",
           "workloads_outside", "outside", "recorded_at")


@dataclass(frozen=True)
class RunSettings:
    """How long each partition replays and with what claims (the bake-off's defaults are ADR-03's month)."""

    days: float = 30.0
    warmup_days: float = 7.0
    units: int = 40
    rate_pct_h: float = 4.0
    revision: str = ""
    contracts_dir: str = ""     # empty: the command's default contract repository
    cache_dir: str = ".sco/bakeoff-traces"
    timeout_s: float = 4 * 3600.0


def sco_executable() -> str:
    """The ``sco`` beside this interpreter (the image's or the venv's), else the one on PATH."""
    here = Path(sys.executable).with_name("sco")
    return str(here) if here.exists() else "sco"


def run_partition(seed: str, strategy: str, settings: RunSettings, env: Mapping[str, str] | None = None,
                  log: Any = None) -> StrategyMonth:
    """Run ``sco bakeoff run`` for one partition and return its record; its progress lines go to ``log``.

    Raises:
        BakeoffError: ``BAK010`` the command failed or timed out (its last lines in the message), ``BAK011`` its
        output is not a record.
    """
    cmd = [sco_executable(), "bakeoff", "run", "--seed", seed, "--strategy", strategy, "--days", f"{settings.days:g}",
           "--warmup-days", f"{settings.warmup_days:g}", "--units", str(settings.units),
           "--rate", f"{settings.rate_pct_h:g}", "--cache", settings.cache_dir, "--revision", settings.revision]
    if settings.contracts_dir:
        cmd += ["--contracts", settings.contracts_dir]
    code, stdout, stderr = _run_streaming(cmd, {**os.environ, **(env or {})}, settings.timeout_s,
                                          log.info if log is not None else None)
    if code is None:
        raise BakeoffError("BAK010", f"seed {seed} {strategy}: no record after {settings.timeout_s:.0f} s; "
                                     "raise RunSettings.timeout_s or shorten days")
    if code != 0:
        tail = "\n".join(stderr[-8:])
        raise BakeoffError("BAK010", f"seed {seed} {strategy}: `sco bakeoff run` exited {code}: {tail}")
    lines = stdout.strip().splitlines()
    try:
        return parse_strategy_month(lines[-1] if lines else "")
    except ValueError as exc:
        raise BakeoffError("BAK011", f"seed {seed} {strategy}: the command's last line is not a strategy-month "
                                     f"record ({exc})") from None


def _run_streaming(cmd: list[str], env: Mapping[str, str], timeout_s: float, show: Callable[[str], object] | None
                   ) -> tuple[int | None, str, list[str]]:
    """Run ``cmd``; each stderr line goes to ``show`` as it is written (a month's progress reaches the run's log
    while it runs, not at its end). Its exit code (None: killed after ``timeout_s``), stdout and stderr lines."""
    out: list[str] = []
    err: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(env)) as proc:
        stdout, stderr = proc.stdout, proc.stderr
        assert stdout is not None and stderr is not None
        reader = threading.Thread(target=lambda: out.append(stdout.read()), daemon=True)
        reader.start()
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            for line in stderr:
                err.append(line.rstrip("\n"))
                if show is not None:
                    show(err[-1])
            code = proc.wait()
            reader.join()
        finally:
            timed_out = not timer.is_alive()
            timer.cancel()
            if proc.poll() is None:   # the log raised: the month is not left running for Popen to wait on
                proc.kill()
    return (None if timed_out and code < 0 else code), "".join(out), err


def row(record: StrategyMonth, recorded_at: datetime) -> list[Any]:
    """The ClickHouse row of ``record`` in ``COLUMNS`` order."""
    values = record.model_dump()
    return [*(values[c] for c in COLUMNS[:-1]), recorded_at]
