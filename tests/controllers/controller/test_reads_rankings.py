"""The rankings in force are read again only when the server's version of them changed (``reads.RankingMemo``):
an unchanged ranking answers one row and the memo's parsed objects; a replaced ranking, an update of one row, a
deletion or an insertion of one is read; a fresh memo reads what the database holds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import psycopg

from controllers.controller.reads import RankingMemo, send_inputs
from orchestration.store import replace_in_force

NOW = datetime(2026, 10, 1, tzinfo=UTC)
COLUMNS = ("region", "pool", "rank", "score", "generation", "ranked_at", "inputs")


class _Pg:
    """What ``replace_in_force`` asks of the analytics' PostgreSQL resource: a connection of its own."""

    def __init__(self, url: str) -> None:
        self.url = url

    def connection(self) -> Any:
        return psycopg.connect(self.url)


def _rank(conn: Any, scores: dict[str, float], generation: int) -> None:
    rows = [("r1", pool, i, score, generation, NOW, json.dumps({"forward_share": 0.5, "reclaims": 1,
                                                                "instance_hours": 10.0}))
            for i, (pool, score) in enumerate(sorted(scores.items()), start=1)]
    with conn.transaction():
        conn.execute("DELETE FROM rankings_in_force WHERE region = 'r1'")
        for r in rows:
            conn.execute(f"INSERT INTO rankings_in_force ({', '.join(COLUMNS)}) VALUES "
                         f"({', '.join(['%s'] * len(COLUMNS))})", r)


def _rows_sent(conn: Any, memo: RankingMemo) -> tuple[int, Any]:
    """The rows the ranking statement answered, and the inputs read through the memo."""
    seen: list[int] = []
    execute = conn.execute

    def counting(sql: str, params: Any = None) -> Any:
        cur = execute(sql, params)
        if "rankings_in_force" in sql:
            seen.append(cur.rowcount)
        return cur
    conn.execute = counting
    try:
        inputs = send_inputs(conn, "r1", NOW, memo)()
    finally:
        conn.execute = execute
    return seen[0], inputs


def test_an_unchanged_ranking_answers_one_row_and_the_memos_very_objects(conn: Any) -> None:
    _rank(conn, {"p1": 0.9, "p2": 0.5, "p3": 0.1}, 1)
    memo = RankingMemo()
    n, first = _rows_sent(conn, memo)
    assert n == 3 and first.scores == {"p1": 0.9, "p2": 0.5, "p3": 0.1}
    assert first.exposure["p2"] == (1.0, 10.0) and first.depth["p1"] == (0.5, 1.0)
    n, again = _rows_sent(conn, memo)
    assert n == 1 and again.scores is first.scores and again.exposure is first.exposure


def test_a_replaced_ranking_an_updated_row_a_deleted_row_and_an_inserted_row_are_each_read(conn: Any) -> None:
    _rank(conn, {"p1": 0.9, "p2": 0.5}, 1)
    memo = RankingMemo()
    _rows_sent(conn, memo)
    changes = (
        (lambda: _rank(conn, {"p1": 0.9, "p2": 0.4}, 2), {"p1": 0.9, "p2": 0.4}),    # same count, new writer
        (lambda: conn.execute("UPDATE rankings_in_force SET score = 0.3 WHERE pool = 'p1'"), {"p1": 0.3, "p2": 0.4}),
        (lambda: conn.execute("DELETE FROM rankings_in_force WHERE pool = 'p2'"), {"p1": 0.3}),
        (lambda: conn.execute("INSERT INTO rankings_in_force (region, pool, rank, score, generation, ranked_at) "
                              "VALUES ('r1', 'p9', 9, 0.2, 3, %s)", (NOW,)), {"p1": 0.3, "p9": 0.2}),
    )
    for change, want in changes:
        change()
        n, got = _rows_sent(conn, memo)
        assert (n, got.scores) == (len(want), want)
        assert _rows_sent(conn, RankingMemo())[1].scores == want   # what a fresh read says


def test_a_region_without_a_ranking_reads_none_and_then_the_first_one_the_analytics_write(
        conn: Any, pg_migrated_url: str) -> None:
    memo = RankingMemo()
    assert _rows_sent(conn, memo)[1].scores == {}
    assert _rows_sent(conn, memo)[1].scores == {}
    replace_in_force(_Pg(pg_migrated_url), "rankings_in_force", "r1", COLUMNS[:6], [("r1", "p1", 1, 0.7, 1, NOW)])
    assert _rows_sent(conn, memo)[1].scores == {"p1": 0.7}


def _version(conn: Any) -> int:
    row = conn.execute("SELECT version FROM in_force_versions WHERE tbl = 'rankings_in_force' AND region = 'r1'"
                       ).fetchone()
    return 0 if row is None else int(row[0])


def test_a_replacement_of_many_rows_bumps_the_version_once_a_statement_and_keeps_every_value_exact(
        conn: Any, pg_migrated_url: str) -> None:
    """The version a pass compares moves with each statement, not each row (231 bumps a ranking would cost more
    than the scan they replace); the values go through text and come back as they were written."""
    columns = (*COLUMNS, "reclaim_p_1h", "reclaim_p", "model_version")
    rows = [("r1", f"p{i:03d}", i, 1 / (i + 3), 7, NOW, json.dumps({"forward_share": i / 7}),
             None if i % 5 == 0 else 0.1 + i / 1e9, json.dumps({"60": {"notice": 0.25}}), "m1")
            for i in range(1, 232)]
    replace_in_force(_Pg(pg_migrated_url), "rankings_in_force", "r1", columns, rows[:3])
    before = _version(conn)
    assert before == 1   # the first: an INSERT (the DELETE found no row of the region: nothing changed)
    replace_in_force(_Pg(pg_migrated_url), "rankings_in_force", "r1", columns, rows)
    assert _version(conn) == before + 2   # the DELETE and the INSERT
    got = conn.execute(f"SELECT {', '.join(columns)} FROM rankings_in_force WHERE region = 'r1' ORDER BY rank"
                       ).fetchall()
    assert [(*r[:6], json.dumps(r[6]), r[7], json.dumps(r[8]), r[9]) for r in got] == rows
    replace_in_force(_Pg(pg_migrated_url), "rankings_in_force", "r1", columns, [])
    assert _version(conn) == before + 3 and _rows_sent(conn, RankingMemo())[1].scores == {}
