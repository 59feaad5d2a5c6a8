"""The demo's progress display: what is happening, from the lifecycle events themselves.

It subscribes to ``sco.events.>`` on NATS (every event any process publishes also reaches plain
subscribers), counts events by kind, keeps the latest few lines, and redraws a small panel once a second:
the phase, elapsed time, the fleet, and placements, notices, drains, replacements, fallbacks. Without a
terminal (CI, a pipe) it prints each phase's line once, when the phase starts, and a count line (fleet and
events, not the phase again) every 10 s instead; a phase with no tick (no count line) gets a ``still:`` line
after 12 s of silence (``keepalive``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Display"]

SHOWN = ("launched", "notice", "drain-started", "drain-local", "drained", "overrun", "replaced", "lost",
         "no-notice-loss", "floor-restored", "fallback-started", "approval-requested", "shortfall", "excluded",
         "terminated")


COUNT_LINE_S = 10.0  # without a terminal, the count line's period while the fleet ticks


@dataclass
class Display:
    started: float = field(default_factory=time.monotonic)
    phase: str = "starting"
    counts: Counter[str] = field(default_factory=Counter)
    drills: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=8))
    fleet: dict[str, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    tty: bool = field(default_factory=lambda: sys.stdout.isatty())
    _last_line: float = 0.0
    _shown_phase: str = ""
    _live: Any = None

    def elapsed(self) -> float:
        """Seconds since the demo started, as every line shows them."""
        return time.monotonic() - self.started

    def set_phase(self, phase: str) -> None:
        """Show ``phase``: in a terminal the panel is redrawn; without one, its line is printed once."""
        self.phase = phase
        if self.tty:
            self.refresh()
        elif phase != self._shown_phase:
            # once, and the count line waits its 10 s: it used to follow at once, repeating the phase
            self._shown_phase = phase
            self._last_line = time.monotonic()
            print(f"[{self.elapsed():6.1f} s] {phase}", flush=True)

    def keepalive(self, quiet_s: float = 12.0) -> None:
        """Without a terminal: after ``quiet_s`` with no line, say the phase is still working (the panel, in a
        terminal, shows the elapsed time already). The live phases' ticks print their count line sooner
        (``COUNT_LINE_S``), so this speaks only for the phases that do not tick."""
        if self.tty or time.monotonic() - self._last_line < quiet_s:
            return
        self._last_line = time.monotonic()
        print(f"[{self.elapsed():6.1f} s]   still: {self.phase}", flush=True)

    def on_event(self, data: bytes) -> None:
        """Count one published lifecycle event and keep the notable ones as recent lines; other tenants' instances and
        bytes that are not JSON are skipped."""
        try:
            event = json.loads(data)
        except ValueError:
            return
        if event.get("source") == "simregion" and not event.get("workload"):
            return  # another tenant's instance: not ours to show
        self.events.append(event)
        kind = str(event.get("kind", "?"))
        self.counts[kind] += 1
        if event.get("drill"):
            self.drills += 1
        if kind in ("notice", "drained", "overrun", "replaced", "fallback-started", "excluded", "floor-restored",
                    "shortfall", "drain-local", "approval-requested", "breaker-tripped"):
            who = event.get("workload") or event.get("pool") or ""
            inst = (event.get("instance") or "")[:8]
            self.recent.append(f"{self.elapsed():6.1f} s  {kind:<18} {who:<24} {inst} {event.get('cause', '')}")

    def counts_line(self) -> str:
        """The fleet and the events so far (the phase has its own line)."""
        parts = [f"{k} {self.counts[k]}" for k in SHOWN if self.counts[k]]
        fleet = ", ".join(f"{k} {v}" for k, v in self.fleet.items())
        happened = ", ".join(parts) or "no events yet"
        return f"[{self.elapsed():6.1f} s]   fleet: {fleet or '-'} | {happened}"

    def _render(self) -> Any:
        from rich.panel import Panel
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        table.add_row(f"[bold]{self.phase}[/]", f"{self.elapsed():.0f} s",
                      "fleet: " + (", ".join(f"{k} {v}" for k, v in self.fleet.items()) or "-"))
        counts = Table(show_header=True, header_style="bold", box=None)
        for k in SHOWN:
            counts.add_column(k.replace("-", " "), justify="right")
        counts.add_row(*[str(self.counts[k]) for k in SHOWN])
        body = Table.grid()
        body.add_row(table)
        body.add_row(counts)
        for line in self.recent:
            body.add_row(f"[dim]{line}[/]")
        return Panel(body, title="SCO demo", border_style="cyan")

    def start(self) -> None:
        """In a terminal, start the live panel; without one, nothing (the lines are printed as they come)."""
        if self.tty:
            from rich.live import Live

            self._live = Live(self._render(), refresh_per_second=2, transient=False)
            self._live.start()

    def refresh(self) -> None:
        """Redraw the panel; without a terminal, print the count line when its period has passed."""
        if self._live is not None:
            self._live.update(self._render())
        elif time.monotonic() - self._last_line >= COUNT_LINE_S:
            self._last_line = time.monotonic()
            print(self.counts_line(), flush=True)

    def stop(self) -> None:
        """Draw the panel a last time and leave it on screen."""
        if self._live is not None:
            self._live.update(self._render())
            self._live.stop()
            self._live = None
