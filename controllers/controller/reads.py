"""The controller's reads, each as ``send_*``: the statement goes out (queued, in pipeline mode) and a reader is
returned that turns its rows into the value a pass uses. A pass sends all its reads before it reads any, so
that in pipeline mode (``pgbatch.pipelined``) the first reader waits once for all of them: one round trip for a
glance, one for a look, however many kinds of rows (ADR-10 still: every pass reads them all again).

Outside pipeline mode each statement is its own round trip, as before; every read is a single statement, so
none needs a transaction of its own. (The ledger's and the approvals' reads are theirs: ``ledger.send_committed``,
``approval_store.send_unjudged``.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from .exclusion import FULL
from .fallback import Approval
from .model import Gone, InputsInForce

__all__ = [
    "FLAGS",
    "ROW_COLUMNS",
    "TEXTS",
    "RankingMemo",
    "Reader",
    "flags",
    "send_approvals",
    "send_breaker_open",
    "send_fallback_launched",
    "send_inputs",
    "send_max_generation",
    "send_open_breakers",
    "send_others_launched_since",
    "send_revocations_due",
    "send_rows",
    "texts",
    "value",
]

T = TypeVar("T")
Reader = Callable[[], T]

ROW_COLUMNS = ("workload", "pool", "partition", "generation", "state", "idle", "purpose")


# A list of ids or states as one text parameter split by the server: the listing's ids go out several times a pass,
# and psycopg dumps a Python list element by element (a third of a pass's dumping time, profiled). The
# separator is ASCII's unit separator, which no id, state or name carries.
TEXTS = "string_to_array(%s, chr(31))"
FLAGS = "string_to_array(%s, NULL)::bool[]"   # one character a flag, 't' or 'f'


def texts(xs: Iterable[str]) -> str:
    """``xs`` as the one parameter ``TEXTS`` splits."""
    return "\x1f".join(xs)


def flags(xs: Iterable[bool]) -> str:
    """``xs`` as the one parameter ``FLAGS`` splits."""
    return "".join("t" if x else "f" for x in xs)


def value(x: T) -> Reader[T]:
    """A reader of a value known without a statement."""
    return lambda: x


@dataclass
class RankingMemo:
    """The rankings in force as the last read parsed them, with the server's version of them (a memo: emptying it
    changes nothing a pass decides, only what it reads)."""

    version: str | None = None
    parsed: tuple[dict[str, float], dict[str, tuple[float, float]], dict[str, tuple[float, float]],
                  dict[str, float]] = field(default_factory=lambda: ({}, {}, {}, {}))


# The rows come back only when the region's rankings are not the version the memo holds: ``in_force_versions``,
# bumped by every statement that changes the region's rows (a trigger; a ranking is replaced in one transaction,
# ``orchestration.store``). Unchanged, one row of NULLs answers: between two rankings (5 min) four passes in five
# read 231 rows and their JSON for nothing.
# The forecast's column is read as a column: the controller migrates its database before its first pass, so the
# column is there (reading it through ``to_jsonb(r)``, for a database before the forecast's migration, cost 1.4 of
# the read's 1.6 ms for 231 rows). A pool without a forecast has NULL, and the baseline estimate stands in
# (``pool_view.reclaim_estimates``).
_RANKED = ("WITH v AS (SELECT coalesce((SELECT version FROM in_force_versions WHERE tbl = 'rankings_in_force' "
           "AND region = %s), 0)::text AS version) "
           "SELECT v.version, r.pool, r.score, (r.inputs->>'forward_share')::float8, "
           "(r.inputs->>'quota_headroom')::float8, (r.inputs->>'reclaims')::float8, "
           "(r.inputs->>'instance_hours')::float8, r.reclaim_p_1h "
           "FROM v LEFT JOIN rankings_in_force r "
           "ON r.region = %s AND v.version IS DISTINCT FROM %s")


def send_inputs(conn: Any, region: str, now: datetime, memo: RankingMemo | None = None) -> Reader[InputsInForce]:
    """Rankings, correlation groups and exclusions in force (three statements); with ``memo``, the rankings' rows
    only when they changed since the memo's read (the memo's parsed rankings otherwise, the very objects)."""
    memo = memo if memo is not None else RankingMemo()
    ranked = conn.execute(_RANKED, (region, region, memo.version))
    grouped = conn.execute("SELECT pool, group_id FROM correlation_groups WHERE region = %s", (region,))
    held = conn.execute("SELECT pool, until, probation_until, cause, excluded_at FROM exclusions WHERE region = %s",
                        (region,))

    def read() -> InputsInForce:
        rows = ranked.fetchall()
        if rows[0][1] is not None or rows[0][0] != memo.version:
            memo.version, memo.parsed = rows[0][0], _parsed_rankings(r[1:] for r in rows if r[1] is not None)
        scores, depth, exposure, forecast = memo.parsed
        groups = dict(grouped.fetchall())
        excluded: set[str] = set()
        probation: set[str] = set()
        full: dict[str, datetime] = {}
        ends: list[datetime] = []
        for pool, until, prob, cause, at in held:
            if until is None or now < until:
                if cause == FULL:
                    full[pool] = at
                else:
                    excluded.add(pool)
            elif prob is not None and now < prob and cause != FULL:
                probation.add(pool)
            ends += [t for t in (until, prob) if t is not None and t > now]
        return InputsInForce(scores, groups, excluded, probation, set(full), full, depth, exposure, forecast,
                             min(ends, default=None))
    return read


def _parsed_rankings(rows: Iterable[Sequence[Any]]) -> tuple[dict[str, float], dict[str, tuple[float, float]],
                                                            dict[str, tuple[float, float]], dict[str, float]]:
    """Scores, depth (forward share, quota headroom), exposure (reclaims, instance-hours) and the forecast per pool."""
    scores: dict[str, float] = {}
    depth: dict[str, tuple[float, float]] = {}
    exposure: dict[str, tuple[float, float]] = {}
    forecast: dict[str, float] = {}
    for pool, score, share, headroom, reclaims, hours, p_1h in rows:
        scores[pool] = float(score)
        if share is not None:
            depth[pool] = (float(share), 1.0 if headroom is None else float(headroom))
        if hours is not None:
            exposure[pool] = (float(reclaims or 0.0), float(hours))
        if p_1h is not None:
            forecast[pool] = float(p_1h)
    return scores, depth, exposure, forecast


def send_others_launched_since(conn: Any, region: str, partition: str, at: datetime | None
                               ) -> Reader[dict[str, int]]:
    """The other partitions' live instances launched at or after ``at`` (the rate card's time), per pool."""
    if at is None:
        return value({})
    cur = conn.execute("SELECT pool, count(*) FROM instances WHERE region = %s AND partition <> %s AND "
                       "launched_at >= %s AND state IN ('launching', 'running') GROUP BY pool", (region, partition, at))
    return lambda: {str(pool): int(n) for pool, n in cur}


def send_rows(conn: Any, region: str, partition: str, listed: Sequence[str] | None
              ) -> Reader[dict[str, dict[str, Any]]]:
    """The partition's instance rows (``Store.rows``)."""
    if listed is None:
        cur = conn.execute(_ROWS + "WHERE region = %s AND partition = %s", (region, partition))
    else:   # the rows not ended, and the ended ones of the listed instances found by key (not by a scan of them all)
        cur = conn.execute(_ROWS + "WHERE region = %s AND partition = %s AND state NOT IN ('terminated', 'lost') "
                           "UNION ALL " + _ROWS + f"JOIN unnest({TEXTS}) AS u(id) ON instance_id = u.id WHERE "
                           "region = %s AND partition = %s AND state IN ('terminated', 'lost')",
                           (region, partition, texts(listed), region, partition))
    return lambda: {r[0]: dict(zip(ROW_COLUMNS, r[1:], strict=True)) for r in cur}


_ROWS = ("SELECT instance_id, workload, pool, partition, plan_generation, state, idle_observations, purpose "
         "FROM instances ")


def send_revocations_due(conn: Any, region: str, partition: str, now: datetime, limit: int = 100
                         ) -> Reader[list[Gone]]:
    """Instances of the partition whose failed revocation is due for another attempt, oldest first."""
    cur = conn.execute("SELECT instance_id, coalesce(workload, ''), pool, state, launched_at FROM instances WHERE "
                       "region = %s AND partition = %s AND revocation_next_at <= %s ORDER BY revocation_next_at "
                       "LIMIT %s", (region, partition, now, limit))
    return lambda: [Gone(str(r[0]), str(r[1]), str(r[2]), str(r[3]), r[4]) for r in cur]


def send_max_generation(conn: Any, region: str, partition: str) -> Reader[int]:
    """The partition's highest plan generation (0 before any plan): the next pass numbers its plans after it."""
    cur = conn.execute("SELECT coalesce(max(generation), 0) FROM plans WHERE region = %s AND partition = %s",
                       (region, partition))
    return lambda: int(cur.fetchone()[0])


def send_breaker_open(conn: Any, region: str, partition: str) -> Reader[bool]:
    """True when the partition's termination breaker is open, so no surplus is terminated."""
    cur = conn.execute("SELECT state FROM breakers WHERE region = %s AND partition = %s AND name = 'termination'",
                       (region, partition))

    def read() -> bool:
        row = cur.fetchone()
        return bool(row and row[0] == "open")
    return read


def send_approvals(conn: Any, region: str) -> Reader[dict[str, Approval]]:
    """Each workload's newest approval request."""
    cur = conn.execute("SELECT DISTINCT ON (workload) workload, requested_at, state, granted_eur, options FROM "
                       "approval_requests WHERE region = %s ORDER BY workload, requested_at DESC", (region,))

    def read() -> dict[str, Approval]:
        out: dict[str, Approval] = {}
        for w, at, state, granted, options in cur:
            units = max((int(o.get("units", 0)) for o in options or []), default=0)
            out[w] = Approval(at, state, Decimal(granted), units)
        return out
    return read


def send_fallback_launched(conn: Any, region: str, since: datetime) -> Reader[int]:
    """Fallback instances launched in the region after ``since`` (the 40/min stagger)."""
    cur = conn.execute("SELECT count(*) FROM instances WHERE region = %s AND purpose = 'fallback' AND "
                       "launched_at > %s", (region, since))
    return lambda: int(cur.fetchone()[0])



def send_open_breakers(conn: Any, region: str) -> Reader[dict[str, datetime]]:
    """The region's open termination breakers: partition -> when it tripped."""
    cur = conn.execute("SELECT partition, tripped_at FROM breakers WHERE region = %s AND name = 'termination' AND "
                       "state = 'open'", (region,))
    return lambda: {str(p): t for p, t in cur}
