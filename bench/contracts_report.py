"""ADR-03's report at its window: ``sco contracts report`` over 30 days of pool history through the production
controller, timed end to end, against the same report on the replay-only model in the same run.

    .venv/bin/python -m bench.contracts_report [--days 30] [--warmup-days 7] [--seed 1] [--target-min 10]

A ClickHouse front end of its own (authenticated, a temporary chDB directory) gets ``--warmup-days + --days`` of the
simulated region's history as ``sco sim history`` writes it (``write_history``: the full region, 231 pools); then
the real command runs as a child process, ``python -m sco contracts report deploy/contracts --clickhouse URL
--replay-days D --warmup-days W`` (the default engine, the production controller over the history, the 14 example
workloads), its progress passed through to stderr; then the same command with ``--replay-engine model``, the
baseline. Printed: each run's wall, the ratio, the rows the report gave, and PASS/FAIL against ``--target-min`` of
wall for the controller's report (a window shorter than 30 days is scaled to 30 and says so).

Exit 0 on PASS, 1 on FAIL, 2 when a figure cannot be produced (a service, the history or a report failed, or the
report left a workload out).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench._cli import parser, stop_on_signals

ROOT = Path(__file__).resolve().parents[1]
REPO = ROOT / "deploy" / "contracts"
MONTH_DAYS = 30.0


def _history(url: str, seed: int, days: int, end: datetime) -> float:
    """Write ``days`` of the region's history ending at ``end``; the seconds it took."""
    from controllers.simregion.config import RegionConfig
    from controllers.simregion.history import write_history
    from stores import clickhouse, migrate

    started = time.perf_counter()
    client = clickhouse.client(url)
    try:
        migrate.migrate_clickhouse(client)
        write_history(client, RegionConfig(seed=seed), days=days, start=end - timedelta(days=days),
                      progress=lambda d, n: print(f"history: day {d} of {n}", file=sys.stderr, flush=True))
    finally:
        client.close()
    return time.perf_counter() - started


def _report(url: str, days: float, warmup: float, engine: str) -> tuple[float, str]:
    """``sco contracts report`` with ``engine``: its wall and stdout; RuntimeError when it fails."""
    cmd = [sys.executable, "-m", "sco", "contracts", "report", str(REPO), "--clickhouse", url,
           "--replay-days", f"{days:g}", "--warmup-days", f"{warmup:g}", "--replay-engine", engine]
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"`sco contracts report --replay-engine {engine}` exited {done.returncode}:\n"
                           f"{done.stdout[-2000:]}")
    return wall, done.stdout


def _rows(stdout: str) -> dict[str, str]:
    """The replay table's rows by workload (empty when the report printed no replay)."""
    if "Replay (ADR-03)" not in stdout:
        return {}
    table = stdout.split("Replay (ADR-03)", 1)[1]
    return {line.split()[0]: line for line in table.splitlines()
            if re.match(r"^[a-z][a-z0-9-]+\s+\d", line)}


def _workloads(stdout: str) -> set[str]:
    """The workloads the compiler's part of the report lists (``name@version``)."""
    head = stdout.split("Replay (ADR-03)", 1)[0]
    return {m.split("@")[0] for m in re.findall(r"^(\S+@\d+)\s", head, re.M)}


def main(argv: list[str] | None = None) -> int:
    p = parser("bench.contracts_report", __doc__)
    p.add_argument("--days", type=float, default=MONTH_DAYS, help="days replayed (default 30, ADR-03's window)")
    p.add_argument("--warmup-days", type=float, default=7.0)
    p.add_argument("--seed", type=int, default=1, help="the simulated region's seed for the history")
    p.add_argument("--target-min", type=float, default=10.0, help="minutes of wall for a 30-day report")
    args = p.parse_args(argv)
    stop_on_signals()
    from testkit.clickhouse import ClickHouseProcess

    end = datetime(2026, 10, 1, tzinfo=UTC)
    ch = ClickHouseProcess()
    try:
        ch.start()
        url = ch.create_database()
        wrote = _history(url, args.seed, math.ceil(args.days + args.warmup_days), end)
        print(f"history: {args.days + args.warmup_days:g} days written in {wrote:.0f} s", file=sys.stderr)
        controller_s, out = _report(url, args.days, args.warmup_days, "controller")
        model_s, model_out = _report(url, args.days, args.warmup_days, "model")
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"no figure: {exc}", file=sys.stderr)
        return 2
    finally:
        ch.close()
    rows, wanted = _rows(out), _workloads(out)
    missing = sorted(wanted - set(rows))
    if not rows or missing or not _rows(model_out):
        print(f"no figure: the report's replay table left out {', '.join(missing) or 'every workload'}",
              file=sys.stderr)
        return 2
    print(out.split("Replay (ADR-03)", 1)[1].rstrip())
    month_s = controller_s * MONTH_DAYS / args.days
    scaled = "" if args.days == MONTH_DAYS else f" (scaled from {args.days:g} days: {controller_s:.0f} s)"
    print(f"\n{len(rows)} workloads replayed over {args.days:g} days after {args.warmup_days:g} of warm-up")
    print(f"controller report: {controller_s:.0f} s of wall; baseline, the replay-only model's report in the same "
          f"run: {model_s:.0f} s ({controller_s / model_s:.0f}× its wall)")
    ok = month_s <= args.target_min * 60
    print(f"{'PASS' if ok else 'FAIL'}  a 30-day report through the production controller in {month_s / 60:.1f} min "
          f"of wall{scaled} (target ≤ {args.target_min:g} min)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
