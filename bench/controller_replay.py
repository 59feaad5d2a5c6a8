"""The replay through the production controller: seconds a pass and a strategy-day, this tree against a
baseline tree (default: ``main``, exported with ``git archive``) in the same run, and whether both decided the same.

Each side runs in its own process, the same command on its own code: the full simulated region (seed 1, 231 pools,
the repository's contracts, claims sized as ``sco simulate`` sizes them) replayed ``--hours`` through one
production controller per partition on a fresh embedded PostgreSQL, strategy depth-first, a pass every 60 s of
virtual time. A pass is one replay pass (both partitions' controllers, the region, the tallies); the warm-up (7
days of the region alone) and the set-up are timed apart. Wall and CPU (``time.process_time`` of the replaying
process; PostgreSQL's own CPU is not in it) are printed side by side: the machine may be shared.

Decisions: the outbox (every event's kind, workload, pool, instance, cause and attributes, in order; random ids
left out), the plans table and the outcomes must be the same on both sides, else FAIL.

    .venv/bin/python -m bench.controller_replay [--hours 2] [--baseline-ref main] [--target 0.03]

Exit 0 on PASS (per-pass wall ≤ target and the same decisions), 1 on FAIL, 2 when a figure cannot be produced.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RANDOM_KEYS = ("reservation", "request", "decision")   # uuid4s the controller mints: not decisions
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")   # event ids (evidence)


def _measure(hours: float, seed: int) -> dict[str, Any]:
    """One replay in this process, on whatever code ``sys.path`` gives (both trees need the replay API)."""
    from controllers.controller.loop import Controller
    from controllers.planning import Strategy
    from controllers.replay import size_claims
    from controllers.replay.from_region import trace_from_region
    from controllers.simregion.config import RegionConfig
    from sco.commands.simulate import _compiled
    from sco.commands.simulate_controller import EmbeddedPostgres, run_controller_engine

    start = datetime(2026, 10, 1, tzinfo=UTC)
    contracts = _compiled(ROOT / "deploy" / "contracts")
    trace = trace_from_region(RegionConfig(seed=seed), start, hours / 24, 7.0)
    claims = {c.workload: c.units for c in size_claims(trace, contracts, 40)}
    first: list[tuple[float, float]] = []
    server: dict[int, list[float]] = {}   # backend pid -> its CPU seconds at the first and the last pass
    step = Controller.step

    def timed_step(self: Any) -> Any:
        if not first:
            first.append((time.perf_counter(), time.process_time()))
        pid = self.conn.info.backend_pid
        server.setdefault(pid, [_cpu_of(pid)] * 2)[1] = _cpu_of(pid)
        return step(self)

    Controller.step = timed_step   # type: ignore[method-assign]
    pg = EmbeddedPostgres()
    try:
        url = pg.database()
        t0, c0 = time.perf_counter(), time.process_time()
        diagnostics: dict[str, int] = {}
        out = run_controller_engine(url, RegionConfig(seed=seed), start, hours / 24, contracts, claims,
                                    Strategy.DEPTH_FIRST, 7.0, None, diagnostics)
        t1, c1 = time.perf_counter(), time.process_time()
        digest = _decisions(url, out)
    finally:
        Controller.step = step   # type: ignore[method-assign]
        pg.close()
    passes = round(hours * 60)
    return {"passes": passes, "setup_wall_s": first[0][0] - t0, "setup_cpu_s": first[0][1] - c0,
            "pass_wall_s": (t1 - first[0][0]) / passes, "pass_cpu_s": (c1 - first[0][1]) / passes,
            "pass_pg_cpu_s": sum(b - a for a, b in server.values()) / passes,
            "diagnostics": diagnostics, **digest}


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a local process (the PostgreSQL backend serving the replay)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _decisions(url: str, outcomes: dict[str, Any]) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        events = []
        for (payload,) in conn.execute("SELECT payload FROM outbox ORDER BY id"):
            e = json.loads(bytes(payload))
            attrs = {k: v for k, v in (e.get("attributes") or {}).items() if k not in RANDOM_KEYS}
            events.append([e.get(k) for k in ("kind", "time", "workload", "pool", "instance", "cause")]
                          + [UUID.sub("<id>", json.dumps(attrs, sort_keys=True))])
        plans = [list(r) for r in conn.execute(
            "SELECT workload, generation, partition, plan::text, in_force FROM plans ORDER BY workload, generation")]
    figures = {w: [o.interruptions, o.wasted_s, o.shortfall_s, o.instance_s, str(o.cost)]
               for w, o in sorted(outcomes.items())}
    blob = json.dumps([events, plans, figures], sort_keys=True, default=str).encode()
    return {"events": len(events), "plans": len(plans), "decisions_sha256": hashlib.sha256(blob).hexdigest()}


def _side(tree: Path, hours: float, seed: int) -> dict[str, Any]:
    """Run ``_measure`` on ``tree``'s code in a child process (this file's code drives it)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-c", "import runpy, sys; sys.argv = sys.argv[1:]; "
           "runpy.run_path(sys.argv[0], run_name='__main__')", __file__, "--child", "--hours", str(hours),
           "--seed", str(seed)]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the replay on {tree} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _export(ref: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.controller_replay")
    p.add_argument("--hours", type=float, default=2.0, help="virtual hours replayed (a pass a minute)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline-ref", default="main", help="the git ref measured as 'before' ('' to skip)")
    p.add_argument("--target", type=float, default=0.03, help="seconds of wall a pass, after")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:   # a SIGTERM ends it through ``finally``: the embedded PostgreSQL is stopped
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        print(json.dumps(_measure(args.hours, args.seed)))
        return 0
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{args.hours:g} h replayed at full scale (seed {args.seed}, depth-first)")
    try:
        sides = {"after": _side(ROOT, args.hours, args.seed)}
        if args.baseline_ref:
            with tempfile.TemporaryDirectory(prefix="sco-bench-base-") as d:
                _export(args.baseline_ref, Path(d))
                sides["before"] = _side(Path(d), args.hours, args.seed)
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as exc:
        print(f"no figure: {exc}", file=sys.stderr)
        return 2
    for name in ("before", "after"):
        s = sides.get(name)
        if s is not None:
            print(f"{name:6s} ({'ref ' + args.baseline_ref if name == 'before' else 'this tree'}): "
                  f"{s['pass_wall_s']:.4f} s a pass wall ({s['pass_cpu_s']:.4f} CPU here, "
                  f"{s['pass_pg_cpu_s']:.4f} in PostgreSQL's backend), "
                  f"{s['pass_wall_s'] * 1440 / 60:.1f} min a strategy-day wall ({s['pass_cpu_s'] * 1440 / 60:.1f} "
                  f"CPU); set-up + warm-up {s['setup_wall_s']:.0f} s wall ({s['setup_cpu_s']:.0f} CPU); "
                  f"{s['events']} events, {s['plans']} plans, decisions {s['decisions_sha256'][:12]}")
    after, before = sides["after"], sides.get("before")
    same = before is None or before["decisions_sha256"] == after["decisions_sha256"]
    if before is not None:
        print(f"ratio before/after: {before['pass_wall_s'] / after['pass_wall_s']:.1f}× wall, "
              f"{before['pass_cpu_s'] / after['pass_cpu_s']:.1f}× CPU; same decisions: {'yes' if same else 'NO'}")
    ok = same and after["pass_wall_s"] <= args.target
    print(f"{'PASS' if ok else 'FAIL'}  {after['pass_wall_s']:.4f} s a pass (target ≤ {args.target:g} s)"
          f"{'' if same else '; the decisions differ from the baseline'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
