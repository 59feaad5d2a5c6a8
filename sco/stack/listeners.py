"""Whose listening socket answers on a loopback port: the server we just spawned, or somebody else's.

A port picked free a moment ago can be taken before our server binds it (another test's server restarting on
its recorded port, another stack picking the same ephemeral port). Our server then fails to bind and exits, but
for the instant in between a connect() to the port succeeds, and a caller that only asks "does it answer?" goes
on talking to a stranger's server. Linux says who holds a socket: ``/proc/net/tcp`` gives the listening
socket's inode, ``/proc/<pid>/fd`` the sockets each process holds.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["held_by_session", "listening_inodes", "socket_inodes"]

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column
_PROC = Path("/proc")


def listening_inodes(port: int, proc_root: Path = _PROC) -> set[str] | None:
    """The inodes of the sockets listening on ``port`` (IPv4 and IPv6); None when this system has no
    ``/proc/net/tcp`` to ask."""
    found: set[str] = set()
    tables = [proc_root / "net" / name for name in ("tcp", "tcp6")]
    if not tables[0].is_file():
        return None
    for table in tables:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def _session(pid: int, proc_root: Path) -> int | None:
    try:
        stat = (proc_root / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: the fields after it start past the last ")"
    return int(stat.rsplit(")", 1)[1].split()[3])


def socket_inodes(pid: int, proc_root: Path = _PROC) -> set[str]:
    """The inodes of the sockets ``pid`` holds open (``PermissionError``: another account's process)."""
    out: set[str] = set()
    fds = proc_root / str(pid) / "fd"
    for fd in os.listdir(fds):
        try:
            target = os.readlink(fds / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def held_by_session(port: int, leader: int, proc_root: Path = _PROC) -> bool | None:
    """True when a process in ``leader``'s session (our servers each start a session of their own, and a
    server's workers stay in it) holds the socket listening on ``port``; False when another process does or
    nothing listens; None when this cannot be known here (no ``/proc``, or another account's descriptors that
    we may not read)."""
    inodes = listening_inodes(port, proc_root)
    if inodes is None:
        return None
    if not inodes:
        return False
    sid = _session(leader, proc_root)
    if sid is None:
        return False  # the leader is gone: whatever listens is not ours
    unknowable = False
    for entry in os.listdir(proc_root):
        if not entry.isdigit() or _session(int(entry), proc_root) != sid:
            continue
        try:
            if socket_inodes(int(entry), proc_root) & inodes:
                return True
        except PermissionError:
            unknowable = True
        except OSError:
            continue
    return None if unknowable else False
