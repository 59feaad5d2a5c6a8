"""Every bench answers ``python -m bench.X --help`` with its usage and exits 0, before measuring or starting
anything. Run in this process (``runpy``, as ``-m`` runs it): a bench that ignored ``--help`` and started a server
would meet the fast tier's refusal (tests/conftest.py), one that started measuring would not print a usage."""

from __future__ import annotations

import runpy
import sys

import pytest

import bench._cli
from bench.__main__ import commands


def test_the_catalogue_lists_the_benches_and_leaves_out_their_helpers() -> None:
    names = commands()
    assert {"agent_footprint", "clickhouse_concurrency", "controller_rebuild", "fleet_sim"} <= set(names)
    assert "nats_auth" not in names  # a helper the agent benches share, no command of its own


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", commands())
def test_the_bench_answers_help_without_running(name: str, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", [f"bench/{name}.py", "--help"])
    monkeypatch.delitem(sys.modules, f"bench.{name}", raising=False)  # imported by another test: run it afresh
    # a bench's own signal handlers and exit-time reaper belong to its process, not to this test session's
    monkeypatch.setattr(bench._cli, "stop_on_signals", lambda: None)
    with pytest.raises(SystemExit) as exited:
        runpy.run_module(f"bench.{name}", run_name="__main__")
    out = capsys.readouterr().out
    assert exited.value.code in (0, None), out
    assert out.lower().startswith("usage:"), out[:500]
