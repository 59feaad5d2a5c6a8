from __future__ import annotations

import re
from pathlib import Path

import pytest

from reports import svg
from sco.cli import main

from . import worked_example as ex
from .helpers import Stack

pytestmark = pytest.mark.xdist_group("orchestration-history")  # shares the materialised history


def _self_contained(html: str) -> None:
    assert "<script" not in html.lower()
    external = [u for u in re.findall(r"""(?:src|href)=["']([^"']+)""", html)]
    assert external == []
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html


def test_a_waterfall_steps_down_from_the_counterfactual_to_the_net() -> None:
    chart = svg.waterfall(("counterfactual", 116.6), [("reclaimable", 33.6), ("floor", 19.2)], "net saving")
    assert chart.count("<rect") == 4
    assert "net saving: 63.80 EUR" in chart and "floor: 19.20 EUR" in chart


def test_bars_escape_labels_and_show_negative_values_in_red() -> None:
    chart = svg.bars([("<pool>", 1.0), ("loss", -2.0)])
    assert "&lt;pool&gt;" in chart and "<pool>" not in chart
    assert svg.BAD in chart and svg.GOOD in chart


def test_a_line_draws_the_declared_limit() -> None:
    chart = svg.line([("d1", 1.0), ("d2", 3.0)], limit=2.0, limit_label="cap €2.00")
    assert "stroke-dasharray" in chart and "cap €2.00" in chart


@pytest.mark.slow
def test_sco_report_showback_writes_a_self_contained_page_with_every_cost_line(
        materialised: Stack, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "etl.html"
    code = main(["report", "showback", "--workload", "etl", "--month", ex.DAY.strftime("%Y-%m"), "--out", str(out),
                 "--clickhouse", materialised.clickhouse_url, "--postgres", materialised.postgres_url])
    assert code == 0
    assert "net saving €56.44" in capsys.readouterr().out
    html = out.read_text()
    _self_contained(html)
    for text in ("rate-card saving", "€56.44", "€116.40", "reclaimable hours", "floor (committed)", "fallback hours",
                 "warm headroom", "checkpoint storage", "orchestrator share", "declared", "Recommendation",
                 "advisories no reclaim followed"):
        assert text in html, text
    assert html.count("<svg") >= 4


@pytest.mark.slow
def test_sco_report_fleet_shows_rankings_groups_and_saving_by_tier(materialised: Stack, tmp_path: Path) -> None:
    out = tmp_path / "fleet.html"
    assert main(["report", "fleet", "--out", str(out), "--clickhouse", materialised.clickhouse_url,
                 "--postgres", materialised.postgres_url]) == 0
    html = out.read_text()
    _self_contained(html)
    assert "Pools ranked" in html and "Correlation groups in force" in html and "T3" in html


@pytest.mark.slow
def test_an_unknown_workload_is_a_one_line_error_naming_it(materialised: Stack, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", "showback", "--workload", "nope", "--month", ex.DAY.strftime("%Y-%m"), "--out",
                 str(tmp_path / "x.html"),
                 "--clickhouse", materialised.clickhouse_url])
    err = capsys.readouterr().err
    assert code != 0 and "'nope'" in err and "Traceback" not in err


def test_a_malformed_month_is_refused_with_the_expected_form(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", "showback", "--workload", "etl", "--month", "August", "--clickhouse", "http://127.0.0.1:1"])
    assert code == 2 and "expected YYYY-MM" in capsys.readouterr().err


class _Closing:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_missing_mart_becomes_the_materialise_message_and_both_connections_are_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from sco.cli import CliError
    from sco.commands import report_pages

    ch, pg = _Closing(), _Closing()
    monkeypatch.setattr(report_pages, "_connect", lambda args: (ch, pg))
    with pytest.raises(CliError, match="finance marts are not built yet"), \
            report_pages._marts(argparse.Namespace()):
        raise RuntimeError("Code: 60. DB::Exception: UNKNOWN_TABLE fct_showback_monthly")
    assert ch.closed and pg.closed
    ch2 = _Closing()
    monkeypatch.setattr(report_pages, "_connect", lambda args: (ch2, None))
    with pytest.raises(ValueError, match="other"), report_pages._marts(argparse.Namespace()):
        raise ValueError("other")
    assert ch2.closed


def test_the_fleet_page_shows_the_forecasts_scores_and_its_reliability_diagram() -> None:
    from datetime import date

    from reports.data import FleetData, ForecastScore
    from reports.pages import fleet_page

    score = ForecastScore(date(2026, 3, 1), "hgb-abc", 3456, 0.091, 0.0275,
                          {"price rank alone": (0.124, 0.0314)}, [(0.01, 0.012, 100.0), (0.05, 0.047, 100.0)], True)
    page = fleet_page(FleetData(None, [], [], [], {}, [], [], score), "r1")
    assert "Reclaim forecast — 2026-03-01" in page and "PASS" in page and "hgb-abc" in page
    assert "0.09100" in page and "price rank alone" in page and "0.12400" in page
    assert "reliability of the 1 h reclaim forecast" in page and page.count("<circle") >= 2
    assert "Not scored yet" in fleet_page(FleetData(None, [], [], [], {}, [], []), "r1")


def test_a_reliability_diagram_places_each_bin_against_the_diagonal() -> None:
    from reports.svg import reliability

    out = reliability([(0.02, 0.02, 10.0), (0.1, 0.05, 5.0)], title="<t>")
    assert out.count("<circle") == 2 and "stroke-dasharray" in out and "&lt;t&gt;" in out
    assert "forecast 0.1000, observed 0.0500, 5 instances" in out
    assert "no data" in reliability([])
