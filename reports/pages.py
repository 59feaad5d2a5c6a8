"""Self-contained HTML pages (inline CSS and SVG, nothing fetched): a showback page per workload and month
(ADR-27) and a fleet page."""

from __future__ import annotations

from decimal import Decimal
from html import escape
from typing import Any

from . import svg
from .data import LINES, FleetData, ShowbackData

__all__ = ["fleet_page", "showback_page"]

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:980px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}table{border-collapse:collapse;margin:.5em 0}
td,th{padding:.25em .8em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.label{display:inline-block;background:#eef;border-radius:4px;padding:0 .4em}.bad{color:#c62828}.good{color:#2e7d32}
.note{color:#555;font-size:.9em}"""
_NAMES = {"reclaimable_eur": "reclaimable hours", "floor_eur": "floor (committed)",
          "fallback_eur": "fallback hours", "headroom_eur": "warm headroom", "storage_eur": "checkpoint storage",
          "orchestrator_eur": "orchestrator share"}
_SHORT = {"reclaimable_eur": "reclaimable", "floor_eur": "floor", "fallback_eur": "fallback",
          "headroom_eur": "headroom", "storage_eur": "storage", "orchestrator_eur": "orchestrator"}


def _eur(v: Any) -> str:
    return f"€{Decimal(v):,.2f}"


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>\n")


def showback_page(d: ShowbackData) -> str:
    m = d.month_row
    month = d.month.strftime("%Y-%m")
    lines = [(_SHORT[k], float(m[k])) for k in LINES]
    body = [f"<h1>Showback — {escape(d.workload)} — {month}</h1>",
            f"<p><span class=\"label\">{escape(str(m['label']))}</span> Net saving <b>{_eur(m['net_saving_eur'])}</b> "
            f"({float(m['net_pct']):.1f} % of the {_eur(m['counterfactual_eur'])} counterfactual); gross rate-card "
            f"discount {_eur(m['gross_saving_eur'])}. The saving becomes money only when guaranteed capacity "
            "purchases fall because of it.</p>",
            "<h2>From the counterfactual to the net saving</h2>",
            svg.waterfall(("counterfactual", float(m["counterfactual_eur"])), lines, "net saving",
                          title=f"cost lines of {d.workload}"),
            "<table><tr><th>line</th><th>EUR</th></tr>",
            f"<tr><td>useful work at the guaranteed rate (counterfactual)</td><td class=n>"
            f"{_eur(m['counterfactual_eur'])}</td></tr>",
            *(f"<tr><td>− {escape(name)}</td><td class=n>{_eur(m[k])}</td></tr>" for k, name in _NAMES.items()),
            f"<tr><th>net saving</th><th class=n>{_eur(m['net_saving_eur'])}</th></tr></table>",
            f"<p class=note>Wasted work {float(m['wasted_hours']):,.2f} instance-hours (removed from useful work, "
            f"not added as a cost), of which {float(m['false_positive_hours']):,.2f} h "
            f"({_eur(m['false_positive_eur'])}) drained by advisories no reclaim followed, charged because this "
            "workload opted in to advisory drain (ADR-16); losses from the workload's own defects "
            f"{_eur(m['defect_wasted_eur'])} "
            f"(reported here, not charged to reclaim); depth premium {_eur(m['depth_premium_eur'])} "
            "(inside the reclaimable spend).</p>"]
    body.append("<h2>Interruptions against the declared tolerance</h2>")
    if d.breach:
        b = d.breach
        cls = "bad" if b["breach"] else "good"
        body.append(f"<p class={cls}>Measured {float(b['measured']):.3f} %/h ({int(b['interruptions'])} interruptions "
                    f"over {float(b['hours']):,.1f} instance-hours) against a declared {float(b['declared']):.3f} %/h"
                    f"{' — breach: the owner is alerted; the contract is not changed' if b['breach'] else ''}.</p>")
        body.append(svg.bars([("measured %/h", float(b["measured"])), ("declared %/h", float(b["declared"]))],
                             unit="%/h", title="interruption rate"))
    else:
        body.append("<p class=note>No measurement yet.</p>")
    if d.breach_events:
        last = d.breach_events[-1]
        body.append(f"<p class=bad>{len(d.breach_events)} contract-breach event(s) this month, the owner alerted for "
                    f"each; the latest at {escape(last[0])} UTC: measured {escape(last[1])} %/h against a declared "
                    f"{escape(last[2])} %/h.</p>")
    cap = d.contract.get("spend_cap_24h_eur")
    body.append("<h2>Fallback spend per day against the 24 h cap</h2>")
    body.append(svg.line([(day, float(f)) for day, f, _ in d.daily], limit=float(cap) if cap else None,
                         limit_label=f"cap €{float(cap):,.2f}" if cap else "", title="fallback spend per day"))
    body.append("<h2>Net saving per day</h2>")
    body.append(svg.bars([(day, float(n)) for day, _, n in d.daily], title="net saving per day"))
    body.append("<h2>Recommendation</h2>")
    if d.recommendation:
        body.append(f"<p><b>{escape(d.recommendation['direction'])}</b>: {escape(d.recommendation['reason'])}</p>")
    else:
        body.append("<p class=note>None yet.</p>")
    return _page(f"Showback {d.workload} {month}", "".join(body))


def fleet_page(d: FleetData, region: str) -> str:
    body = [f"<h1>Fleet — {escape(region)}</h1>"]
    body.append(f"<h2>Net saving by tier{' — ' + d.month.strftime('%Y-%m') if d.month else ''} "
                "<span class=label>rate-card saving</span></h2>")
    body.append(svg.bars([(t, float(n)) for t, _, n in d.by_tier], title="net saving by tier"))
    body.append("<table><tr><th>tier</th><th>counterfactual</th><th>net</th><th>%</th></tr>" + "".join(
        f"<tr><td>{escape(t)}</td><td class=n>{_eur(cf)}</td><td class=n>{_eur(n)}</td>"
        f"<td class=n>{(float(n) / float(cf) * 100 if cf else 0):.1f}</td></tr>" for t, cf, n in d.by_tier)
        + "</table>")
    body.append(f"<h2>Pools ranked ({len(d.rankings)})</h2>")
    body.append(svg.bars([(p, s) for _, p, s, _, _ in d.rankings[:25]], unit="score", title="top pools by score"))
    body.append("<table><tr><th>#</th><th>pool</th><th>score</th><th>interruption %/h</th><th>discount</th></tr>" +
                "".join(f"<tr><td class=n>{r}</td><td>{escape(p)}</td><td class=n>{s:.3f}</td><td class=n>{i:.2f}</td>"
                        f"<td class=n>{dsc:.0%}</td></tr>" for r, p, s, i, dsc in d.rankings) + "</table>")
    body.append(f"<h2>Exclusions ({len(d.exclusions)})</h2>")
    body.append("<table><tr><th>pool</th><th>reason</th><th>since</th></tr>" + "".join(
        f"<tr><td>{escape(p)}</td><td>{escape(r)}</td><td>{escape(t)}</td></tr>" for p, r, t in d.exclusions)
        + "</table>" if d.exclusions else "<p class=note>No pool is excluded.</p>")
    body.append(f"<h2>Correlation groups in force ({len(d.groups)})</h2>")
    body.append(svg.bars([(g, float(len(m))) for g, m in sorted(d.groups.items())], unit="pools",
                         title="pools per correlation group"))
    body.append("<table><tr><th>group</th><th>pools</th></tr>" + "".join(
        f"<tr><td>{escape(g)}</td><td>{escape(', '.join(m))}</td></tr>" for g, m in sorted(d.groups.items()))
        + "</table>")
    if d.changes:
        body.append("<h3>Latest splits and merges, with evidence</h3><table><tr><th>change</th><th>pools</th>"
                    "<th>phi</th><th>shared 10-min windows</th></tr>" + "".join(
                        f"<tr><td>{escape(k)}</td><td>{escape(', '.join(p))}</td><td class=n>{phi:.3f}</td>"
                        f"<td class=n>{j}</td></tr>" for k, p, phi, j in d.changes) + "</table>")
    body.append(_forecast_section(d))
    if d.recommendations:
        body.append("<h2>Recommendations</h2><table><tr><th>workload</th><th>direction</th><th>why</th></tr>" + "".join(
            f"<tr><td>{escape(w)}</td><td>{escape(dr)}</td><td>{escape(r)}</td></tr>" for w, dr, r in d.recommendations)
            + "</table>")
    return _page(f"Fleet {region}", "".join(body))


def _forecast_section(d: FleetData) -> str:
    """The reclaim forecast's latest day: its scores beside the baselines' and its reliability diagram."""
    f = d.forecast
    if f is None:
        return "<h2>Reclaim forecast</h2><p class=note>Not scored yet (a day of published forecasts is needed).</p>"
    rows = [("forecast", f.log_loss, f.brier), *((n, ll, br) for n, (ll, br) in sorted(f.baselines.items()))]
    verdict = "PASS" if f.passed else "FAIL"
    return (f"<h2>Reclaim forecast — {escape(str(f.day))} <span class=label>{verdict}</span></h2>"
            f"<p>P(an instance placed now is reclaimed within 1 h), model {escape(f.model_version)}, "
            f"{f.samples:,} pool forecasts scored on the day's realised reclaims beside the baselines.</p>"
            "<table><tr><th>forecaster</th><th>log-loss</th><th>Brier</th></tr>" + "".join(
                f"<tr><td>{escape(n)}</td><td class=n>{ll:.5f}</td><td class=n>{br:.6f}</td></tr>"
                for n, ll, br in rows) + "</table>"
            + svg.reliability(f.reliability, title="reliability of the 1 h reclaim forecast"))
