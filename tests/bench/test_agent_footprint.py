"""The footprint bench builds the agent's minimal venv by following the agent's imports of ``contracts``: a form
it misses leaves a module out and the bench dies at start-up (as ``from contracts import agent_userdata`` did)."""

from __future__ import annotations

from pathlib import Path

from bench.agent_footprint import _contracts_imports, light_contracts


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
