"""The one logging set-up: a JSON line per record with its time, level, component and the ids it carries; text
lines name the component; the environment picks the format when no flag does."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from contracts.logsetup import configure, default_format


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)


def test_a_json_line_carries_time_level_component_partition_and_event_ids(root_restored: None) -> None:
    out = io.StringIO()
    configure("controller-run", fmt="json", partition="r1/slurm-hpc", region="r1", stream=out)
    logging.getLogger("controllers.loop").warning("placed %d", 3, extra={"event_id": "ev-1", "instance": "i-9"})
    line = json.loads(out.getvalue())
    assert line["level"] == "WARNING" and line["component"] == "controller-run"
    assert line["partition"] == "r1/slurm-hpc" and line["region"] == "r1"
    assert line["event_id"] == "ev-1" and line["instance"] == "i-9" and line["message"] == "placed 3"
    assert line["time"].endswith("Z") and line["time"][10] == "T"


def test_an_exception_is_one_json_line_with_its_error(root_restored: None) -> None:
    out = io.StringIO()
    configure("ingest", fmt="json", stream=out)
    try:
        raise ValueError("bad row")
    except ValueError:
        logging.getLogger("x").exception("batch failed")
    (line,) = out.getvalue().splitlines()
    record = json.loads(line)
    assert record["error"] == "ValueError: bad row" and "Traceback" in record["traceback"]


def test_configure_replaces_an_earlier_basic_config_and_itself(root_restored: None) -> None:
    earlier = logging.StreamHandler(io.StringIO())  # what logging.basicConfig installs
    logging.getLogger().addHandler(earlier)
    first = configure("a", fmt="text", stream=io.StringIO())
    second = configure("b", fmt="text", stream=io.StringIO())
    root = logging.getLogger().handlers
    assert second in root and first not in root and earlier not in root


def test_text_lines_name_the_component_and_partition(root_restored: None) -> None:
    out = io.StringIO()
    configure("distributor-serve", fmt="text", partition="r1/k8s-prod", stream=out)
    logging.getLogger("d").info("serving")
    assert "INFO distributor-serve [r1/k8s-prod] d: serving" in out.getvalue()


def test_the_environment_picks_the_format_and_an_unknown_one_is_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCO_LOG_FORMAT", "JSON")
    assert default_format() == "json"
    monkeypatch.setenv("SCO_LOG_FORMAT", "xml")
    assert default_format() == "text"


def test_an_unknown_format_is_refused(root_restored: None) -> None:
    with pytest.raises(ValueError, match="log format 'xml'"):
        configure("x", fmt="xml")
