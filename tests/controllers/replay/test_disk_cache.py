"""The replay's disk cache: keyed by inputs and code, private, whole, and refusing what it did not write."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from controllers.replay import disk_cache
from controllers.replay.disk_cache import cache_dir, cached, entry_key, load, prune, store


class Computations:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, object]:
        self.calls += 1
        return {"value": [1, 2, 3], "call": self.calls}


def test_a_second_call_with_the_same_inputs_reads_the_first_ones_value_without_computing(tmp_path: Path) -> None:
    compute = Computations()
    first = cached("trace", ("seed 1", 2.0), compute, tmp_path)
    second = cached("trace", ("seed 1", 2.0), compute, tmp_path)
    assert compute.calls == 1 and second == first == {"value": [1, 2, 3], "call": 1}


@pytest.mark.parametrize("other", [("seed 2", 2.0), ("seed 1", 3.0)])
def test_other_inputs_are_another_entry(tmp_path: Path, other: tuple[object, ...]) -> None:
    compute = Computations()
    cached("trace", ("seed 1", 2.0), compute, tmp_path)
    assert cached("trace", other, compute, tmp_path)["call"] == 2
    assert entry_key("trace", *other) != entry_key("trace", "seed 1", 2.0)


def test_a_change_to_the_code_that_computes_an_entry_is_another_key(monkeypatch: pytest.MonkeyPatch) -> None:
    before = entry_key("warmup", "seed 1")
    monkeypatch.setattr(disk_cache, "source_digest", lambda: "another tree")
    assert entry_key("warmup", "seed 1") != before


def test_the_source_digest_covers_the_region_simulator(tmp_path: Path) -> None:
    (tmp_path / "controllers" / "simregion").mkdir(parents=True)
    module = tmp_path / "controllers" / "simregion" / "engine.py"
    module.write_text("RATE = 1\n")
    before = disk_cache.source_digest.__wrapped__(tmp_path, ("controllers/simregion",))
    module.write_text("RATE = 2\n")
    assert disk_cache.source_digest.__wrapped__(tmp_path, ("controllers/simregion",)) != before


def test_no_cache_computes_every_time() -> None:
    compute = Computations()
    cached("trace", ("x",), compute, None)
    cached("trace", ("x",), compute, None)
    assert compute.calls == 2


def test_the_directory_comes_from_the_environment_or_the_users_cache_home(tmp_path: Path) -> None:
    assert cache_dir({"SCO_REPLAY_CACHE": str(tmp_path)}) == tmp_path
    assert cache_dir({"SCO_REPLAY_CACHE": "off"}) is None
    assert cache_dir({"XDG_CACHE_HOME": "/c"}) == Path("/c/sco/replay")
    assert cache_dir({"HOME": "/home/u"}) == Path("/home/u/.cache/sco/replay")


def test_a_new_directory_is_made_private(tmp_path: Path) -> None:
    where = tmp_path / "a" / "cache"
    cached("trace", ("x",), Computations(), where)
    assert where.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o077 == 0 for p in where.iterdir())


def test_a_directory_others_may_write_is_not_read_nor_written_and_the_refusal_is_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    compute = Computations()
    cached("trace", ("x",), compute, tmp_path / "c")
    os.chmod(tmp_path / "c", 0o777)
    with caplog.at_level(logging.WARNING, logger=disk_cache.__name__):
        assert cached("trace", ("x",), compute, tmp_path / "c")["call"] == 2
        assert cached("trace", ("y",), compute, tmp_path / "c")["call"] == 3
    assert "RPC001" in caplog.text and "chmod 700" in caplog.text
    assert len(list((tmp_path / "c").glob("*.pickle"))) == 1   # the refused directory got nothing new


@pytest.mark.parametrize("damage", ["cut short", "one byte changed", "not ours: a symlink"])
def test_an_entry_that_does_not_match_its_digest_or_is_not_a_plain_file_is_removed_and_recomputed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str) -> None:
    compute = Computations()
    cached("trace", ("x",), compute, tmp_path)
    (entry,) = tmp_path.glob("*.pickle")
    blob = entry.read_bytes()
    if damage == "cut short":
        entry.write_bytes(blob[:-10])
    elif damage == "one byte changed":
        entry.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    else:
        elsewhere = tmp_path.parent / f"{tmp_path.name}-forged.pickle"
        elsewhere.write_bytes(blob)
        entry.unlink()
        entry.symlink_to(elsewhere)
    with caplog.at_level(logging.WARNING, logger=disk_cache.__name__):
        assert cached("trace", ("x",), compute, tmp_path)["call"] == 2
    assert "RPC002" in caplog.text
    assert load(tmp_path, entry.name) == {"value": [1, 2, 3], "call": 2}   # written again, whole


def test_an_entry_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    class Unpicklable:
        def __reduce__(self) -> tuple[object, ...]:
            raise TypeError("cannot pickle this")

    with pytest.raises(TypeError):
        store(tmp_path, "trace-x.pickle", Unpicklable())
    assert list(tmp_path.iterdir()) == []


def test_entries_not_written_for_two_weeks_are_pruned(tmp_path: Path) -> None:
    store(tmp_path, "old.pickle", 1)
    store(tmp_path, "new.pickle", 2)
    long_ago = time.time() - 15 * 86400
    os.utime(tmp_path / "old.pickle", (long_ago, long_ago))
    assert prune(tmp_path, time.time()) == [tmp_path / "old.pickle"]
    assert load(tmp_path, "new.pickle") == 2
