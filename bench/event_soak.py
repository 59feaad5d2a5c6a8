"""The event fault soak: nothing lost, nothing duplicated under random SIGKILLs.

    .venv/bin/python -m bench.event_soak [--events 1000000] [--kills 9] [--seed 1] [--targets ingest,nats,frontend]

Two runs of the same pipeline in fresh directories, same events and poisons: the baseline without faults,
then the soak with ``--kills`` SIGKILLs of the ingest, nats-server and the ClickHouse front end (in turn, at
seeded random points, each restarted after a seeded 0–1.5 s). Publishers (1,000 in flight, each retried with
the same ``Nats-Msg-Id`` until the stream acknowledges) → JetStream → ``python -m stores.ingest`` (restarted by
a supervisor loop whenever it exits) → ``sco clickhouse serve``; poison events one per 5,000 (invalid JSON,
an invalid event, one just under ``max_payload``, dated 1971 and 9999, one over ``max_payload``).
Prints events/s of both and their ratio, the recovery after each kill, the reconciliation, and PASS/FAIL for
"0 lost, 0 duplicated" (with every poison accounted for) and "no stall over 10 s". Exit 1 on a FAIL.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench._cli import stop_on_signals
from testkit.eventsoak import TARGETS, plan_soak
from testkit.soakrun import run_soak

STALL_LIMIT_S = 10.0


def main(argv: list[str] | None = None) -> int:
    """Run the baseline and the soak; 0 when both PASS."""
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(prog="bench.event_soak")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--kills", type=int, default=9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--no-baseline", action="store_true", help="only the soak (no ratio)")
    parser.add_argument("--keep", action="store_true", help="keep the servers' and the ingest's logs")
    args = parser.parse_args(argv)
    targets = tuple(t for t in args.targets.split(",") if t)
    root = Path(tempfile.mkdtemp(prefix="sco-bench-soak-"))
    drain_s = 180.0 + args.events / 2000
    try:
        base = None
        if not args.no_baseline:
            base = run_soak(plan_soak(args.events, 0, args.seed, targets=targets), root / "baseline",
                            drain_timeout_s=drain_s)
            print("baseline (no kills):")
            print("\n".join("  " + line for line in base.lines()))
        plan = plan_soak(args.events, args.kills, args.seed, targets=targets)
        soak = run_soak(plan, root / "soak", drain_timeout_s=drain_s)
        print(f"soak ({args.kills} kills of {', '.join(targets)}, seed {args.seed}):")
        print("\n".join("  " + line for line in soak.lines()))
    finally:
        if args.keep:
            print(f"logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if base is not None and base.events_per_s:
        print(f"soak / baseline rate: {soak.events_per_s / base.events_per_s:.2f}x "
              f"({soak.events_per_s:,.0f} against {base.events_per_s:,.0f} events/s)")
    verdicts = [("0 lost, 0 duplicated, every poison dead-lettered (soak)", soak.ok),
                (f"no stall over {STALL_LIMIT_S:.0f} s (soak: {soak.longest_stall_s:.1f} s)",
                 soak.longest_stall_s <= STALL_LIMIT_S)]
    if base is not None:
        verdicts.insert(0, ("0 lost, 0 duplicated (baseline)", base.ok))
    for what, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
