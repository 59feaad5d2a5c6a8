# mypy: disable-error-code="attr-defined"
"""Asset checks on what the controllers and finance read, expressed as great-expectations expectations
over pandas frames. Each returns (passed, message, details); the message names what failed and the fix."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

__all__ = ["ledger_balances", "no_negative_hours", "rankings_cover_pools", "scores_in_range", "validate"]

_CONTEXT: Any = None


def _context() -> Any:
    global _CONTEXT
    if _CONTEXT is None:
        import great_expectations as gx

        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        _CONTEXT = gx.get_context(mode="ephemeral")
    return _CONTEXT


def validate(frame: Any, expectation: Any) -> Any:
    """Validate one expectation against a pandas frame; returns the GE validation result."""
    ctx = _context()
    name = f"frame{id(frame)}"
    source = ctx.data_sources.add_or_update_pandas(name)
    asset = source.add_dataframe_asset(name)
    batch = asset.add_batch_definition_whole_dataframe(name).get_batch(batch_parameters={"dataframe": frame})
    return batch.validate(expectation)


def _unexpected(result: Any) -> list[Any]:
    return list(result.result.get("partial_unexpected_list") or result.result.get("details", {}).get("mismatched", [])
                or [])


def rankings_cover_pools(ranked_pools: Sequence[str], active_pools: Sequence[str]) -> tuple[bool, str]:
    """Whether the ranked pools include every active pool, and the message that says so."""
    import pandas as pd
    from great_expectations import expectations as gxe

    frame = pd.DataFrame({"pool": list(ranked_pools)})
    r = validate(frame, gxe.ExpectColumnDistinctValuesToContainSet(column="pool",
                                                                                 value_set=sorted(active_pools)))
    missing = sorted(set(active_pools) - set(ranked_pools))
    if r.success:
        return True, f"all {len(active_pools)} active pools ranked"
    return False, (f"ranking in force misses {len(missing)} active pool(s): {', '.join(missing[:10])}; the controller "
                   "would not place on them — check the pool's rate card and events, then re-run pool_rankings")


def scores_in_range(scores: Sequence[float]) -> tuple[bool, str]:
    """Whether every score lies in [0, 1], and the message that says so."""
    import pandas as pd
    from great_expectations import expectations as gxe

    frame = pd.DataFrame({"score": [float(s) for s in scores]})
    r = validate(frame, gxe.ExpectColumnValuesToBeBetween(column="score", min_value=0.0, max_value=1.0))
    if r.success:
        return True, f"{len(frame)} scores within [0, 1]"
    return False, f"scores outside [0, 1]: {_unexpected(r)[:10]}; the scoring inputs are inconsistent"


def no_negative_hours(frame: Any, columns: Sequence[str], what: str) -> tuple[bool, str]:
    """Whether ``columns`` of ``frame`` hold no negative value, and the message naming the rows."""
    from great_expectations import expectations as gxe

    bad: list[str] = []
    for column in columns:
        r = validate(frame, gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0))
        if not r.success:
            rows = frame[frame[column] < 0]
            sample = ", ".join(f"{w}@{h}={v}" for w, h, v in
                               rows[["workload", "hour", column]].head(5).itertuples(index=False))
            bad.append(f"{column} < 0 in {r.result.get('unexpected_count')} row(s) ({sample})")
    if not bad:
        return True, f"no negative hours in {len(frame)} {what} rows"
    return False, f"negative hours in {what}: " + "; ".join(bad) + \
        " — find the event with a negative duration or wasted_s and correct it, then re-run the hour"


def ledger_balances(frame: Any, tolerance: float = 1e-6) -> tuple[bool, str]:
    """counterfactual − costs = net, and costs = the sum of the cost lines, on every row."""
    from great_expectations import expectations as gxe

    f = frame.copy()
    lines = ["reclaimable_eur", "floor_eur", "fallback_eur", "headroom_eur", "storage_eur", "orchestrator_eur"]
    f["imbalance"] = (f["counterfactual_eur"] - f["costs_eur"] - f["net_saving_eur"]).astype(float)
    f["lines_gap"] = (f["costs_eur"] - f[lines].sum(axis=1)).astype(float)
    bad = []
    for column in ("imbalance", "lines_gap"):
        r = validate(f, gxe.ExpectColumnValuesToBeBetween(column=column, min_value=-tolerance,
                                                                      max_value=tolerance))
        if not r.success:
            rows = f[(f[column].abs() > tolerance)][["workload", "hour", column]].head(5)
            bad.append(f"{column} in {r.result.get('unexpected_count')} row(s): "
                       + ", ".join(f"{w}@{h}: {v:+.6f}" for w, h, v in rows.itertuples(index=False)))
    if not bad:
        return True, f"{len(f)} ledger rows balance: counterfactual − costs = net"
    return False, "ledger does not balance (" + "; ".join(bad) + ") — recompute the hour from its inputs"
