"""Bundle releases on the distributor's disk (ADR-32): stage, serve to the canary, promote, roll back.

Beside the served tree ``<root>/<region>/<cluster>/`` (what every partition gets) the rollout keeps:

* ``<root>/.rollout/state.json`` — the current release: its number, ``staged`` / ``canary`` / ``promoted`` /
  ``rolled-back``, the canary partition and when the candidate reached it, and the reason of a rollback;
* ``<root>/.rollout/staged/<N>/<region>/<cluster>/`` — release ``N``, a whole ``sco contracts compile --out``;
* ``<root>/.rollout/previous/<N>/…`` — the partitions release ``N`` replaced (for a manual rollback);
* ``<root>/.rollout/quarantine/<N>/…`` — a rolled-back release with ``reason.txt``.

``Catalog`` asks ``serving_dir`` which directory a partition reads: the staged one for the canary partition
while the state is ``canary``, the served tree otherwise. Promotion and rollback are keyed by the release
number and idempotent: a repeated (or interrupted and re-run) action finishes the same renames and no more.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from contracts.bundle_wire import AGENT_BUNDLE, CONTROLLER_BUNDLE
from contracts.settings import CompilerSettings

from .errors import RolloutError
from .gates import GateSource
from .rollout import Action, GateFigures, Hold, Promote, RollBack, RolloutObserved, StartCanary, gate_windows

__all__ = ["Releases", "partition_generation", "serving_dir"]

ROLLOUT = ".rollout"
_BUNDLES = (AGENT_BUNDLE, CONTROLLER_BUNDLE)
_ACTIVE = ("staged", "canary")


def _read_state(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / ROLLOUT / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def serving_dir(root: Path, region: str, cluster: str) -> Path:
    """The directory ``<region>/<cluster>`` is served from: the staged release for the canary, else the tree."""
    state = _read_state(root)
    if state.get("state") == "canary" and state.get("canary") == f"{region}/{cluster}":
        return root / ROLLOUT / "staged" / str(state.get("release")) / region / cluster
    return root / region / cluster


def _header(directory: Path) -> tuple[int, str]:
    """(generation, source digest) of the bundles in ``directory``; (0, "") when none is readable."""
    for name in _BUNDLES:
        try:
            doc = json.loads((directory / name).read_bytes())
            return int(doc.get("generation", 0)), str(doc.get("source_digest", ""))
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    return 0, ""


def partition_generation(directory: Path) -> int:
    """The generation of the bundles in ``directory`` (0 when there is none or it is unreadable)."""
    return _header(directory)[0]


def _partitions(tree: Path) -> list[str]:
    return sorted({f"{p.parent.parent.name}/{p.parent.name}" for name in _BUNDLES for p in tree.glob(f"*/*/{name}")})


class Releases:
    """The releases of one distributor directory (``sco distributor stage`` / ``rollout``)."""

    def __init__(self, root: Path) -> None:
        """Manage the rollout beside the served tree ``root``."""
        self.root = root
        self.home = root / ROLLOUT

    @property
    def state(self) -> dict[str, Any]:
        """The current release's record (empty before the first stage)."""
        return _read_state(self.root)

    def _write_state(self, state: dict[str, Any]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        tmp = self.home / "state.json.tmp"
        tmp.write_text(json.dumps(state, sort_keys=True, indent=1) + "\n")
        os.replace(tmp, self.home / "state.json")

    def staged_tree(self, release: int) -> Path:
        """Where release ``release`` is staged."""
        return self.home / "staged" / str(release)

    def stage(self, source: Path) -> int:
        """Copy a compile's output (``<source>/<region>/<cluster>/``) in as the next release; return its number.

        Raises:
            RolloutError: another release is still staged or on the canary (ROL001), or ``source`` holds no
                bundles (ROL002).
        """
        state = self.state
        if state.get("state") in _ACTIVE:
            raise RolloutError("ROL001", f"release {state.get('release')} is still {state.get('state')} in "
                                         f"{self.home}; let `sco distributor rollout` promote or roll it back first")
        partitions = _partitions(source)
        if not partitions:
            raise RolloutError("ROL002", f"--from {source} holds no <region>/<cluster>/agent-bundle.json; give the "
                                         "output directory of `sco contracts compile --out`")
        self._check_generations(source, partitions)
        release = int(state.get("release", 0)) + 1
        tmp = self.home / "staged" / f".tmp-{release}"
        shutil.rmtree(tmp, ignore_errors=True)
        for partition in partitions:
            shutil.copytree(source / partition, tmp / partition)
        shutil.rmtree(self.staged_tree(release), ignore_errors=True)
        os.rename(tmp, self.staged_tree(release))
        self._write_state({"release": release, "state": "staged", "canary": None, "started_at": None,
                           "reason": ""})
        return release

    def _check_generations(self, source: Path, partitions: list[str]) -> None:
        """A partition's bundle must be able to follow anything the partition was ever offered.

        A quarantined release included: nodes refuse an older generation, or the same one with other content (a re-issue
        of the same content at the same generation, as an unchanged partition's, is taken).
        """
        trees = [self.root, *sorted((self.home / "quarantine").glob("*")), *sorted((self.home / "staged").glob("*"))]
        for partition in partitions:
            offered, digest = _header(source / partition)
            for tree in (t for t in trees if (t / partition).is_dir()):
                generation, seen_digest = _header(tree / partition)
                if generation > offered or (generation == offered and seen_digest != digest):
                    raise RolloutError("ROL004", f"{partition} generation {offered} in --from {source} cannot follow "
                                                 f"generation {generation} in {tree} (nodes may hold it); compile "
                                                 f"again with `--previous {tree}` so the generation moves past it")

    def observe(self, gates: GateSource, settings: CompilerSettings, now: datetime) -> RolloutObserved:
        """The staged release, each partition's served and staged generation, and the canary's gate figures."""
        state = self.state
        if state.get("state") not in _ACTIVE:
            return RolloutObserved()
        release = int(state["release"])
        staged = self.staged_tree(release)
        partitions = {p: (partition_generation(self.root / p), partition_generation(staged / p))
                      for p in sorted(set(_partitions(self.root)) | set(_partitions(staged)))}
        if state.get("state") != "canary":
            return RolloutObserved(release=release, partitions=partitions)
        canary, started = str(state["canary"]), datetime.fromisoformat(str(state["started_at"]))
        soak = timedelta(hours=float(settings.canary_soak_h))
        (c_from, c_to), (b_from, b_to) = gate_windows(started, now, soak)
        candidate: GateFigures | None
        baseline: GateFigures | None
        try:
            candidate, baseline = gates.figures(canary, c_from, c_to), gates.figures(canary, b_from, b_to)
        except OSError:
            candidate = baseline = None
        return RolloutObserved(release=release, partitions=partitions, canary=canary, started_at=started,
                               candidate=candidate, baseline=baseline)

    def apply(self, actions: Iterable[Action], now: datetime) -> list[str]:
        """Carry out the planner's actions; one line of what happened per action."""
        done = []
        for action in actions:
            if isinstance(action, StartCanary):
                done.append(self._start(action, now))
            elif isinstance(action, Promote):
                done.append(self._promote(action.release))
            elif isinstance(action, RollBack):
                done.append(self._roll_back(action.release, action.reason))
            elif isinstance(action, Hold):
                done.append(f"release {action.release}: hold — {action.reason}")
        return done

    def _current(self, release: int) -> dict[str, Any]:
        state = self.state
        if int(state.get("release", 0)) != release:
            raise RolloutError("ROL003", f"the action names release {release} but {self.home / 'state.json'} holds "
                                         f"release {state.get('release')}; run `sco distributor rollout` again")
        return state

    def _start(self, action: StartCanary, now: datetime) -> str:
        state = self._current(action.release)
        if state.get("state") == "canary" and state.get("canary") == action.partition:
            return f"release {action.release}: already on the canary {action.partition}"
        self._write_state({**state, "state": "canary", "canary": action.partition, "started_at": now.isoformat()})
        return f"release {action.release}: served to the canary {action.partition} from {now.isoformat()}"

    def _promote(self, release: int) -> str:
        state = self._current(release)
        if state.get("state") == "promoted":
            return f"release {release}: already promoted"
        staged, previous = self.staged_tree(release), self.home / "previous" / str(release)
        for partition in _partitions(staged):
            served = self.root / partition
            if served.exists():  # an interrupted promotion may have moved the old one already
                (previous / partition).parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(previous / partition, ignore_errors=True)
                os.rename(served, previous / partition)
            served.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staged / partition, served)
        self._write_state({**state, "state": "promoted"})
        return f"release {release}: promoted to every partition (previous generation kept in {previous})"

    def _roll_back(self, release: int, reason: str) -> str:
        state = self._current(release)
        if state.get("state") == "rolled-back":
            return f"release {release}: already rolled back"
        self._write_state({**state, "state": "rolled-back", "reason": reason})
        quarantine = self.home / "quarantine" / str(release)
        if self.staged_tree(release).exists():
            quarantine.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(quarantine, ignore_errors=True)
            os.rename(self.staged_tree(release), quarantine)
        (quarantine / "reason.txt").parent.mkdir(parents=True, exist_ok=True)
        (quarantine / "reason.txt").write_text(reason + "\n")
        return f"release {release}: rolled back ({reason}); quarantined in {quarantine}"
