"""The compiler report printed by ``sco contracts report`` (and by ``make demo`` until the full demo exists)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from contracts.compiler import CompileResult
from contracts.findings import Severity

__all__ = ["render_report", "render_table"]


def _numeric(cell: str) -> bool:
    """A number, negative ones included (``-0.4``), is right-aligned."""
    return cell[:1].isdigit() or (cell[:1] == "-" and cell[1:2].isdigit())


def render_table(headers: list[str], rows: list[list[str]]) -> str:
    """``rows`` under ``headers`` as aligned plain-text columns (numbers right-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) if _numeric(c) else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def render_report(result: CompileResult, repo: Path) -> str:
    """The compile report: one row per workload with its tier, partition, drain budget and checkpoint interval."""
    rows = []
    for w in sorted(result.workloads, key=lambda w: (w.contract.partition, w.contract.tier, w.contract.workload)):
        c = w.contract
        interval = "-" if w.interval_min is None else (
            f"{w.interval_min} min" + ("" if c.checkpoint_interval_min else " (derived)"))
        tier = f"{c.tier}" if not c.needs_review else f"bespoke~{c.base_tier}"
        rows.append([
            c.ref, tier, c.partition, f"{c.drain_budget_s} s", str(c.checkpoint_mode), interval,
            f"{c.floor_pct}%", f"{w.eligible_pools}", f"{w.committed_halls}",
            f"{w.expected_rate_pct_h:.1f}%/h", f"{c.spend_cap_24h_eur} EUR" if c.spend_cap_24h_eur else "-",
        ])
    out = [f"SCO contract compiler report — {repo}", ""]
    out.append(render_table(
        ["workload", "tier", "partition", "drain", "checkpoint", "interval", "floor", "pools", "halls",
         "rate", "24h cap"], rows))
    if result.findings:
        out += ["", "Findings:"]
        ordered = sorted(result.findings, key=lambda f: (f.severity != Severity.ERROR, f.file))
        out += [f"  {f.render()}" for f in ordered]
    tiers = Counter(str(w.contract.base_tier) for w in result.workloads)
    by_tier = ", ".join(f"{t}: {n}" for t, n in sorted(tiers.items()))
    review = sum(1 for w in result.workloads if w.contract.needs_review)
    out += ["", f"{result.files} contract file(s): {len(result.workloads)} compiled ({by_tier}; {review} bespoke "
            f"for review), {result.files - len(result.workloads)} refused; {len(result.errors)} error(s), "
            f"{len(result.warnings)} warning(s)."]
    return "\n".join(out)
