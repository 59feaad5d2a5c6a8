"""The footprint bench builds the agent's minimal venv by following the agent's imports of ``contracts``: a form
it misses leaves a module out and the bench dies at start-up (as ``from contracts import agent_userdata`` did)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.agent_footprint import _contracts_imports, light_contracts, over_budget


def test_every_import_form_of_a_contracts_module_is_followed(tmp_path: Path) -> None:
    outside = tmp_path / "agent" / "x.py"
    outside.parent.mkdir()
    outside.write_text("from contracts.subjects import notice_subject\nfrom contracts import agent_userdata as w\n"
                       "import contracts.canonical\nfrom agent import model\n")
    inside = tmp_path / "contracts" / "y.py"
    inside.parent.mkdir()
    inside.write_text("from .signing import KeyPair\nfrom . import events\nimport json\n")
    assert _contracts_imports(outside) == {"subjects", "agent_userdata", "canonical"}
    assert _contracts_imports(inside) == {"signing", "events"}


def test_the_minimal_venv_holds_the_wire_format_of_the_agent_s_user_data() -> None:
    assert "agent_userdata.py" in light_contracts()
    assert "compiler.py" not in light_contracts()  # the compiler (pydantic, yaml) never reaches a node


FIGURES = {"boot": 20.0, "idle": 21.0, "drain": 22.0, "hwm": 23.0}


def test_figures_within_their_budgets_pass() -> None:
    assert over_budget(FIGURES, millicores=4.0) == []


@pytest.mark.parametrize(("figure", "value"), [("boot", 41.0), ("idle", 40.5), ("hwm", 52.0)])
def test_an_rss_over_40_mib_after_boot_idle_or_at_its_peak_is_a_miss(figure: str, value: float) -> None:
    misses = over_budget({**FIGURES, figure: value}, millicores=4.0)
    assert len(misses) == 1 and f"{value:.1f} MiB > 40 MiB" in misses[0]


def test_idle_cpu_over_20_millicores_is_a_miss() -> None:
    assert over_budget(FIGURES, millicores=20.5) == ["idle CPU 20.50 millicores > 20 m"]
