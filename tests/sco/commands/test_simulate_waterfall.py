"""The waterfall table `sco simulate` and `bench.replay_compare` print: one column a strategy that has one, the
rows from the ceiling through each bar to the net, and the biggest bar named."""

from __future__ import annotations

import pytest

from controllers.replay.waterfall import ITEMS, NOT_MODELLED
from sco.commands.simulate import print_waterfalls


def test_each_strategy_with_a_waterfall_gets_a_column_its_bars_in_order_and_its_biggest_bar_named(
        capsys: pytest.CaptureFixture[str]) -> None:
    bars = dict.fromkeys(ITEMS, 0.5) | {"fallback spend": 4.0}
    ours = {"ceiling": 56.1, **bars, **dict.fromkeys(NOT_MODELLED, 0.0), "net": 48.6}
    print_waterfalls({"ours": ours, "never ran": {}}, "the title")
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "the title" and "never ran" not in "\n".join(out)
    labels = [line.rsplit(None, 1)[0].strip() for line in out[4:-1]]
    assert labels == ["ceiling the floors allow", *(f"− {k}" for k in ITEMS),
                      *(f"− {k} (not modelled)" for k in NOT_MODELLED), "= achieved net"]
    assert out[4].endswith("56.1") and out[-2].endswith("48.6")
    assert out[-1] == "  ours: the biggest bar is fallback spend (4.0 points)"


def test_nothing_is_printed_when_no_strategy_has_a_waterfall(capsys: pytest.CaptureFixture[str]) -> None:
    print_waterfalls({"a": {}})
    assert capsys.readouterr().out == ""
