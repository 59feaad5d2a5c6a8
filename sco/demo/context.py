"""What the demo's phases share: its configuration and the run context each phase reads and fills in."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .display import Display
from .procs import Procs

if TYPE_CHECKING:
    from .fleet import Fleet
    from .summary import Summary

__all__ = ["REPO", "DemoConfig", "RunContext", "Urls"]

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class DemoConfig:
    home: Path = Path(".sco/demo")
    contracts: Path = REPO / "deploy" / "contracts"
    reports: Path = Path("demo-reports")
    live_s: float = 240.0                 # the live part of the timeline
    reclaim_rate_pct_h: float = 150.0     # compressed: ~4 %/h in production
    production_rate_pct_h: float = 4.0    # the rate the one-pager's targets assume (DESIGN §5)
    start_hour: float = 9.0               # the simulated region's hour of day (UTC) at the start: the daily
    #                                       demand cycle's mean, so the figures do not depend on when it runs
    units_per_workload: int = 6
    seed: int = 1
    slurm: bool = True                    # use the real Slurm test bed when it is up
    userdata_agents: int = 3              # simulated Kubernetes nodes at a time with a real sco-agent process
    #                                       booted from the controller's rendered user-data (0: none)


@dataclass(frozen=True)
class Urls:
    postgres: str
    nats: str
    clickhouse: str


@dataclass
class RunContext:
    """One run: set up before the first phase, filled in by the phases in order (the stack's URLs, the signed
    bundles, the simulated region, the fleet), torn down by ``close``."""

    cfg: DemoConfig
    home: Path
    run_dir: Path
    procs: Procs
    display: Display
    summary: Summary
    urls: Urls = Urls("", "", "")
    keys: Path = Path()
    bundles: Path = Path()
    partitions: list[str] = field(default_factory=list)
    sim_url: str = ""
    provider: Any = None
    nc: Any = None
    fleet: Fleet | None = None
    slurm_conf: str | None = None
    slurm_nodes: list[str] = field(default_factory=list)
    live_started: float = 0.0

    def env(self, component: str) -> dict[str, str]:
        """The ``SCO_*_URL`` variables of ``component``: its own credentials from the stack file, given through
        the environment (a command line is readable by every local user); a store it has none for is left out."""
        doc = json.loads((self.home / "stack" / "stack.json").read_text())
        mine: dict[str, str] = doc.get("components", {}).get(component, {})
        return {f"SCO_{store.upper()}_URL": url for store, url in mine.items()}

    def elapsed(self) -> float:
        """Seconds since the live timeline (or, before it, placement) started."""
        return time.monotonic() - self.live_started

    def the_fleet(self) -> Fleet:
        """The running fleet; raises before it has started."""
        if self.fleet is None:
            raise RuntimeError("the fleet is not running yet")
        return self.fleet
