"""A memory's copy (``Memory.copy``, what ``decide`` changes) shares nothing changeable with the memory it came
from: every queue, map and set of the breaker and the floor keeper is the copy's own; the memos are shared."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controllers.controller.decision import Memory
from controllers.controller.settings import ControllerSettings

NOW = datetime(2026, 10, 1, tzinfo=UTC)


def _filled() -> Memory:
    mem = Memory.fresh(ControllerSettings(region="r1", partition="r1/p"))
    mem.safety.cycles, mem.safety.tripped, mem.safety.trip_reason = 5, True, "before"
    mem.safety._terminated.extend([NOW, NOW])
    mem.safety._acted.append((NOW, 3))
    mem.floor.lost["h1"] = NOW
    mem.floor.short_since["etl"] = NOW
    mem.floor.held.add("etl")
    return mem


def _state(mem: Memory) -> tuple[object, ...]:
    s, f = mem.safety, mem.floor
    return (s.cycles, s.tripped, s.trip_reason, list(s._terminated), list(s._acted), dict(f.lost),
            dict(f.short_since), set(f.held))


def test_changing_every_part_of_a_copy_leaves_the_original_as_it_was() -> None:
    mem = _filled()
    before = _state(mem)
    cp = mem.copy()
    assert _state(cp) == before
    cp.safety.cycles += 1
    cp.safety.tripped, cp.safety.trip_reason = False, "after"
    cp.safety._terminated.append(NOW + timedelta(minutes=1))
    cp.safety._acted.append((NOW + timedelta(minutes=1), 4))
    cp.floor.lost["h2"] = NOW
    cp.floor.short_since.pop("etl")
    cp.floor.held.add("ml")
    assert _state(mem) == before and _state(cp) != before
    assert cp.safety.config is mem.safety.config and cp.floor.config is mem.floor.config
    assert cp.pools is mem.pools and cp.work is mem.work
