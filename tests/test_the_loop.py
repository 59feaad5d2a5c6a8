"""The developer's loop as the Makefile writes it: ``make test-fast`` installs no PyTorch and no type checker and
runs no type check (``make typecheck`` and ``make test`` do), the long commands go through the heartbeat, and
the heartbeat speaks when a command is silent and passes its output and exit status through."""

from __future__ import annotations

import re
import subprocess
import tomllib

from testkit.paths import REPO

MAKEFILE = (REPO / "Makefile").read_text()
EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _variable(name: str) -> list[str]:
    return re.search(rf"^{name} := (.*)$", MAKEFILE, re.M).group(1).split(",")


def _recipe(target: str) -> str:
    return re.search(rf"^{target}:.*\n((?:\t.*\n)+)", MAKEFILE, re.M).group(1)


def _requirements(extra: str) -> set[str]:
    """The distributions an extra installs, following ``sco[other]`` to the extras it includes."""
    names: set[str] = set()
    for requirement in EXTRAS[extra]:
        name = re.split(r"[\[<>=!;\s]", requirement, maxsplit=1)[0].lower()
        if name == "sco":
            for included in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                names |= _requirements(included.strip())
        else:
            names.add(name)
    return names


def test_the_fast_tier_installs_neither_pytorch_nor_the_type_checker_and_runs_no_type_check() -> None:
    installed = set().union(*(_requirements(extra) for extra in _variable("FAST_EXTRAS")))
    assert not installed & {"torch", "mypy"}, installed
    assert {"pytest", "pytest-xdist", "ruff", "import-linter", "dagster"} <= installed
    assert "fast-venv" in MAKEFILE.split("test-fast:", 1)[1].splitlines()[0]
    assert "mypy" not in _recipe("test-fast")
    assert "mypy" in _recipe("typecheck") and "mypy" in _recipe("test")
    assert {"typecheck", "ml"} <= set(_variable("ALL_EXTRAS"))


def test_the_long_commands_run_through_the_heartbeat() -> None:
    for target in ("test-fast", "test", "typecheck"):
        for line in _recipe(target).splitlines():
            if re.search(r"\$\(BIN\)/(pytest|mypy)\b", line) and "> .mypy-test.log" not in line:
                assert "$(HEARTBEAT)" in line, (target, line)


def test_the_heartbeat_speaks_after_a_silence_and_keeps_the_output_and_the_status() -> None:
    done = subprocess.run([str(REPO / "scripts" / "heartbeat.sh"), "job", "sh", "-c",
                           "printf 'a'; sleep 1.6; echo b; exit 3"], capture_output=True, text=True, timeout=30,
                          env={"HEARTBEAT_S": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 3
    lines = done.stdout.splitlines()
    assert lines[0] == "a" and re.fullmatch(r"job: still working \(\d+ s\)", lines[1]) and lines[-1] == "b", lines
