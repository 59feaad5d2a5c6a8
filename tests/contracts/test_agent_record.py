"""The agent bundle record: one definition, written by the compiler and read back by the agent."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agent.model import AgentError, Contract, contract_from_entry
from contracts.agent_record import AGENT_RECORD_KEYS, AgentRecord, AgentRecordError
from contracts.bundle import agent_entry, agent_record
from contracts.compiler import check_repo
from testkit.builders import base
from tests.contracts.helpers import EXAMPLES, compile_doc

RECORD = AgentRecord(workload="etl", version="3", tier="T2", scheduler="slurm", drain_budget_s=90,
                     drain_signal="SIGUSR1", advisory_drain=True, checkpoint_mode="periodic-and-final",
                     framework="pytorch", checkpoint_interval_min=30, restart="resume-from-checkpoint", requeue=True,
                     max_unit_length_min=240)


def entry(**changes: Any) -> dict[str, Any]:
    return {**RECORD.to_entry(), **changes}


def test_the_record_has_the_thirteen_keys_of_the_agent_bundle() -> None:
    assert len(AGENT_RECORD_KEYS) == 13
    assert set(RECORD.to_entry()) == set(AGENT_RECORD_KEYS)


OTHER_VALUES = {"workload": "etl2", "version": "4", "tier": "T3", "scheduler": "kubernetes", "drain_budget_s": 7,
                "drain_signal": "SIGTERM", "advisory_drain": False, "checkpoint_mode": "none", "framework": "spark",
                "checkpoint_interval_min": 5, "restart": "not-restartable", "requeue": False,
                "max_unit_length_min": 60}


def test_every_field_round_trips_through_the_bundle_entry() -> None:
    assert AgentRecord.from_entry("etl@3", RECORD.to_entry()) == RECORD
    assert set(OTHER_VALUES) == set(AGENT_RECORD_KEYS)
    for name, other in OTHER_VALUES.items():  # each field changed on its own, so no swapped pair can hide
        changed = dataclasses.replace(RECORD, **{name: other})
        assert changed != RECORD, name
        assert changed.to_entry()[name] == (int(other) if name == "version" else other)
        assert AgentRecord.from_entry("etl@3", changed.to_entry()) == changed, name


@pytest.mark.parametrize("name", ["framework", "checkpoint_interval_min", "max_unit_length_min"])
def test_an_optional_field_round_trips_as_null(name: str) -> None:
    record = dataclasses.replace(RECORD, **{name: None})
    assert record.to_entry()[name] is None
    assert AgentRecord.from_entry("etl@3", record.to_entry()) == record


def test_the_version_is_an_integer_on_the_wire_and_text_on_the_node() -> None:
    assert RECORD.to_entry()["version"] == 3
    assert AgentRecord.from_entry("etl@3", entry(version=3)).version == "3"
    assert AgentRecord.from_entry("etl@3", entry(version="3")).ref == "etl@3"


@pytest.mark.parametrize(("doc", "message"), [
    ({k: v for k, v in RECORD.to_entry().items() if k != "drain_signal"}, "missing drain_signal"),
    ({k: v for k, v in RECORD.to_entry().items() if k not in ("tier", "requeue")}, "missing tier, requeue"),
    ({**RECORD.to_entry(), "floor_pct": 30}, "unknown floor_pct"),
    ({**RECORD.to_entry(), "drain_budget_s": "soon"}, "drain_budget_s is 'soon'; it must be an integer"),
    ({**RECORD.to_entry(), "drain_budget_s": True}, "drain_budget_s is True; it must be an integer"),
    ({**RECORD.to_entry(), "advisory_drain": "false"}, "advisory_drain is 'false'; it must be true or false"),
    ({**RECORD.to_entry(), "workload": None}, "workload is None; it must be a string"),
])
def test_a_missing_unknown_or_mistyped_key_is_named_in_the_error(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentRecordError, match=f"^bundle workload 'etl@3': {message}"):
        AgentRecord.from_entry("etl@3", doc)


def test_the_agent_refuses_an_unusable_entry_with_its_ref_and_the_fix() -> None:
    with pytest.raises(AgentError, match=r"bundle workload 'etl@3': missing restart; recompile the bundle"):
        contract_from_entry("etl@3", {k: v for k, v in RECORD.to_entry().items() if k != "restart"})
    assert contract_from_entry("etl@3", RECORD.to_entry()) == RECORD
    assert Contract is AgentRecord


def test_what_the_compiler_writes_the_agent_reads_back_unchanged() -> None:
    result = check_repo(EXAMPLES)
    assert result.workloads
    for w in result.workloads:
        written = agent_entry(w)
        assert AgentRecord.from_entry(agent_record(w).ref, written) == agent_record(w)
        assert AgentRecord.from_entry(agent_record(w).ref, written).to_entry() == written
        assert written["version"] == w.contract.version


def test_requeue_follows_the_restart_semantics() -> None:
    restartable, _ = compile_doc(base("T2"))
    assert restartable is not None
    assert agent_record(restartable).requeue is (restartable.contract.restart != "not-restartable")


def test_the_record_module_imports_only_the_standard_library() -> None:
    source = Path(__file__).parents[2].joinpath("contracts", "agent_record.py").read_text()
    imports = {line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))}
    outside = {name.split(".")[0] for name in imports if not name.startswith(".")}
    assert outside <= {"__future__", "collections", "dataclasses", "typing"}, outside
    errors = Path(__file__).parents[2].joinpath("contracts", "errors.py").read_text()  # its one relative import
    assert not [line for line in errors.splitlines() if line.startswith("from .") or line.startswith("import ")
                if not line.startswith(("import typing", "from typing"))]
