"""What a replay sets up before its first pass, kept on disk and keyed by its inputs: the simulated region after its
warm-up and a recorded trace are deterministic in the region's configuration, the dates and the code that computes
them, and cost tens of seconds each (the 7-day warm-up alone is ~35 s of CPU, a pickle of it ~2 s to read back), so
the strategies and runs of one seed compute them once.

Where: ``$SCO_REPLAY_CACHE`` (a directory; ``off`` turns the cache off), else ``$XDG_CACHE_HOME/sco/replay``, else
``~/.cache/sco/replay``. The directory is made private (0700); one that is not (another owner, or group or others
may use it) is not read, as a forged file there would be code run by the unpickling: ``RPC001`` is logged and the
replay computes what it needs. Each file carries the SHA-256 of its payload; a file that does not match it (cut short,
changed), is not a regular file of ours, or cannot be read is removed with ``RPC002`` logged and recomputed. Files are
written whole or not at all (a temporary file renamed). The key hashes the inputs and every source file of
``contracts``, ``controllers.simregion`` and ``controllers.replay``: a change to the code that computes an entry is a
new key, and the stale entries are removed by ``prune`` (older than ``MAX_AGE``) when an entry is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import pickle
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CACHE_ENV", "MAGIC", "MAX_AGE_S", "cache_dir", "cached", "entry_key", "load", "prune", "source_digest",
           "store"]

log = logging.getLogger(__name__)

CACHE_ENV = "SCO_REPLAY_CACHE"
MAGIC = b"SCO-REPLAY-CACHE 1\n"
MAX_AGE_S = 14 * 86400.0
_ROOT = Path(__file__).resolve().parents[2]
_SOURCES = ("contracts", "controllers/simregion", "controllers/replay")

T = TypeVar("T")


def cache_dir(environ: dict[str, str] | None = None) -> Path | None:
    """The cache's directory from the environment (None: the cache is off)."""
    env = os.environ if environ is None else environ
    chosen = env.get(CACHE_ENV, "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "sco" / "replay"


@lru_cache(maxsize=1)
def source_digest(root: Path = _ROOT, sources: Sequence[str] = _SOURCES) -> str:
    """SHA-256 over the path and text of every ``.py`` file under ``sources``: the code an entry was computed by."""
    h = hashlib.sha256()
    for top in sources:
        for path in sorted((root / top).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def entry_key(kind: str, *parts: object) -> str:
    """The file name of an entry: its kind and a digest of its inputs (their ``repr``) and the source."""
    body = repr((kind, parts, source_digest())).encode()
    return f"{kind}-{hashlib.sha256(body).hexdigest()[:32]}.pickle"


def _private(directory: Path) -> bool:
    """Make ``directory`` (0700) if missing; True when it is ours and nobody else may use it."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = directory.lstat()
    except OSError as exc:
        log.warning("RPC001 replay cache %s cannot be made (%s); computing without it", directory, exc)
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        log.warning("RPC001 replay cache %s refused: it must be a directory of uid %d with mode 0700 (it is uid %d, "
                    "mode %o); fix: chmod 700 it, or set %s to a private directory or to 'off'", directory,
                    os.getuid(), st.st_uid, stat.S_IMODE(st.st_mode), CACHE_ENV)
        return False
    return True


def _drop(path: Path, why: str) -> None:
    log.warning("RPC002 replay cache entry %s %s; removed, computing it again", path, why)
    with contextlib.suppress(OSError):
        path.unlink()


def load(directory: Path, name: str) -> Any | None:
    """The entry ``name`` in ``directory``, or None (absent, refused or unreadable: see the module's codes)."""
    if not _private(directory):
        return None
    path = directory / name
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _drop(path, f"cannot be read ({exc})")
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        _drop(path, "is not a regular file of this user")
        return None
    blob = path.read_bytes()
    head, payload = blob[:len(MAGIC) + 65], blob[len(MAGIC) + 65:]
    if head[:len(MAGIC)] != MAGIC or head[len(MAGIC):-1].decode("ascii", "replace") != hashlib.sha256(
            payload).hexdigest():
        _drop(path, "does not match its digest (cut short or changed)")
        return None
    try:
        return pickle.loads(payload)   # our own file in our own 0700 directory, its digest checked
    except Exception as exc:   # a class that moved: the digest matched, the code did not
        _drop(path, f"cannot be unpickled ({type(exc).__name__}: {exc})")
        return None


def store(directory: Path, name: str, value: Any) -> None:
    """Write ``value`` as the entry ``name`` (whole or not at all); stale entries of other keys are pruned."""
    if not _private(directory):
        return
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".pickle")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        os.replace(tmp, directory / name)
    except OSError as exc:
        log.warning("RPC003 replay cache entry %s not written (%s)", directory / name, exc)
        Path(tmp).unlink(missing_ok=True)
        return
    prune(directory, time.time())


def prune(directory: Path, now: float, max_age_s: float = MAX_AGE_S) -> list[Path]:
    """Remove entries (and left-over temporary files) not written for ``max_age_s``; the paths removed."""
    gone = []
    for path in directory.glob("*.pickle"):
        try:
            if now - path.stat().st_mtime > max_age_s:
                path.unlink()
                gone.append(path)
        except OSError:
            continue
    return gone


def cached(kind: str, parts: Sequence[object], compute: Callable[[], T], directory: Path | None) -> T:
    """``compute()``'s value, from the cache in ``directory`` (None: no cache; callers pass ``cache_dir()``) when an
    entry of ``kind`` with these inputs is there; otherwise computed and stored."""
    where = directory
    if where is None:
        return compute()
    name = entry_key(kind, *parts)
    hit = load(where, name)
    if hit is not None:
        return hit   # type: ignore[no-any-return]
    value = compute()
    store(where, name, value)
    return value
