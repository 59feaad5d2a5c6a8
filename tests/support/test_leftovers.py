"""The leftover-process plugin finds what a test session left running, and fails the session for it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.paths import REPO
from tests.support.leftovers import ALLOW_VAR, MARKER_VAR, _environ, ancestors, carrying, scan


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _without_addopts() -> dict[str, str]:
    """This environment without ``PYTEST_ADDOPTS``: an outer session's ``--basetemp`` there would make the inner
    session clear the outer one's temporary directory, the inner test file with it."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}


@pytest.fixture
def marker() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def sleeper(marker: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"], env={**os.environ, MARKER_VAR: marker}, start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(5)


def test_a_child_carrying_the_marker_is_found_with_its_command_line(marker: str,
                                                                   sleeper: subprocess.Popen[bytes]) -> None:
    found = carrying(marker)
    assert [(left.pid, left.cmdline) for left in found] == [(sleeper.pid, "sleep 60")]


def test_a_process_with_another_sessions_marker_is_not_found(sleeper: subprocess.Popen[bytes]) -> None:
    assert carrying(uuid.uuid4().hex) == []


def test_once_killed_and_reaped_the_child_is_no_longer_found(marker: str, sleeper: subprocess.Popen[bytes]) -> None:
    sleeper.kill()
    sleeper.wait(5)
    assert carrying(marker) == []


def test_a_killed_child_not_yet_reaped_is_a_zombie_and_not_a_leftover(marker: str,
                                                                      sleeper: subprocess.Popen[bytes]) -> None:
    sleeper.kill()
    os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # dead, still in the process table
    assert carrying(marker) == []


def test_the_ancestors_of_a_process_are_itself_its_parent_and_up_to_init() -> None:
    mine = ancestors(os.getpid())
    assert {os.getpid(), os.getppid()} <= mine
    assert ancestors(os.getppid()) < mine


def test_the_scan_leaves_out_the_scanning_process_and_lists_its_siblings(marker: str) -> None:
    # the shell's background child reads "sh -c …" until it has exec'd sleep: the scan asks again until it has
    program = ("import sys, time\nfrom tests.support.leftovers import scan\n"
               "for _ in range(200):\n"
               "    found = scan(sys.argv[1], grace_s=0)\n"
               "    if all(left.cmdline == 'sleep 60' for left in found) and found: break\n"
               "    time.sleep(0.05)\n"
               "for left in found: print(left.pid, left.cmdline)")
    done = subprocess.run(["sh", "-c", f'sleep 60 >/dev/null 2>&1 & exec "{sys.executable}" -c "$0" {marker}', program],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, MARKER_VAR: marker, "PYTHONPATH": str(REPO)})
    lines = done.stdout.splitlines()
    for line in lines:
        _kill(int(line.split()[0]))
    assert done.returncode == 0, done.stderr
    assert [line.split(" ", 1)[1] for line in lines] == ["sleep 60"]


def test_the_scan_waits_its_grace_for_a_process_on_its_way_out(marker: str) -> None:
    proc = subprocess.Popen(["sleep", "0.3"], env={**os.environ, MARKER_VAR: marker})
    try:
        assert carrying(marker) != []
        assert scan(marker, grace_s=10) == []  # sleep exits after 0.3 s; it is a zombie until reaped
    finally:
        proc.kill()
        proc.wait(5)


LEAKY = textwrap.dedent("""
    import subprocess

    import tests.support.leftovers as leftovers

    leftovers.GRACE_S = 0.2


    def test_leaks_a_process():
        subprocess.Popen(["sleep", "60"], start_new_session=True)
""")


@pytest.mark.parametrize(("allow", "code"), [("", 1), ("allow", 0)])
def test_a_session_that_leaves_a_process_fails_unless_allowed(tmp_path: Path, allow: str, code: int) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # its own basetemp: a session on the default one would reset /tmp/pytest-of-<user> to 0700 under our stacks
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.support.leftovers", "-p", "no:cacheprovider",
                           "-q", "--basetemp", str(tmp_path / "inner"), "test_leaky.py"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env={**_without_addopts(), "PYTHONPATH": str(REPO), ALLOW_VAR: allow})
    pids = [int(pid) for pid in re.findall(r"^pid (\d+): sleep 60$", done.stdout, re.MULTILINE)]
    for pid in pids:
        _kill(pid)
    assert len(pids) == 1, done.stdout
    assert "1 passed" in done.stdout
    assert done.returncode == code, done.stdout


def test_the_scanning_process_own_resource_tracker_is_not_a_leftover_but_a_stray_child_is(marker: str) -> None:
    program = ("import sys, subprocess\n"
               "from multiprocessing import resource_tracker\n"
               "from tests.support.leftovers import scan\n"
               "resource_tracker.ensure_running()\n"
               "stray = subprocess.Popen(['sleep', '60'])\n"
               "for left in scan(sys.argv[1], grace_s=0): print(left.pid, left.cmdline)\n"
               "stray.kill()\n")
    done = subprocess.run([sys.executable, "-c", program, marker], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, MARKER_VAR: marker, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert [line.split(" ", 1)[1] for line in done.stdout.splitlines()] == ["sleep 60"]


def test_a_child_read_the_moment_it_starts_shows_its_environment_even_mid_exec(marker: str) -> None:
    # Popen returns once the exec has begun, before the kernel has written the new environment: a read then sees
    # an empty /proc/PID/environ about once in 30 starts, which is the race this repeats enough to meet (the
    # process's own entry is read, as carrying() reads each one, without scanning all of /proc every time)
    missed = []
    for _ in range(200):
        proc = subprocess.Popen(["sleep", "60"], env={**os.environ, MARKER_VAR: marker}, start_new_session=True)
        try:
            if f"{MARKER_VAR}={marker}".encode() not in _environ(proc.pid, Path("/proc")).split(b"\0"):
                missed.append(proc.pid)
        finally:
            proc.kill()
            proc.wait(5)
    assert missed == []
