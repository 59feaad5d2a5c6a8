"""The daily correlation groups (ADR-06): topology groups from the catalogue, refined by phi over 90 days of
ten-minute reclaim windows, kept with their evidence in ClickHouse and published in force to PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

from .catalogue import load_catalogue
from .phi import WINDOW_S, GroupRules, Groups, indicator_matrix, refine_groups
from .rankings import RECLAIM_FILTER
from .store import ClickHouse, Postgres, replace_in_force

__all__ = ["compute_groups", "groups_in_force", "publish_groups", "reclaim_windows", "write_groups"]


def reclaim_windows(ch: ClickHouse, region: str, now: datetime, days: int) -> tuple[list[tuple[str, int]], int]:
    """Distinct (pool, ten-minute window index) pairs with a reclaim, and the number of windows."""
    start = now - timedelta(days=days)
    rows = ch.rows(
        f"SELECT pool, intDiv(toUnixTimestamp(time) - {{s:Int64}}, {WINDOW_S}) AS w FROM events "
        f"WHERE region = {{r:String}} AND {RECLAIM_FILTER} AND time > {{t0:DateTime64(3)}} "
        "AND time <= {t1:DateTime64(3)} GROUP BY pool, w",
        {"r": region, "s": int(start.timestamp()), "t0": start, "t1": now})
    return [(str(p), int(w)) for p, w in rows], int(days * 86400 // WINDOW_S)


def compute_groups(ch: ClickHouse, region: str, now: datetime, days: int = 90,
                   rules: GroupRules | None = None, topology: dict[str, str] | None = None) -> Groups:
    """Topology groups (aggregates) refined by phi; merges stay inside a hall (the catalogue's)."""
    pools = load_catalogue(ch, region, "reclaimable")
    names = [p.pool for p in pools]
    topo = topology if topology is not None else {p.pool: p.aggregate for p in pools}
    hits, windows = reclaim_windows(ch, region, now, days)
    return refine_groups(names, topo, indicator_matrix(names, hits, windows), rules,
                         halls={p.pool: p.hall for p in pools})


def write_groups(ch: ClickHouse, region: str, now: datetime, groups: Groups, topology: dict[str, str]) -> None:
    """Insert the groups and their changes (splits, merges) computed at ``now``."""
    ch.insert("correlation_group_history",
              [(now, region, p, g, topology.get(p, p), groups.max_phi.get(p, 0.0)) for p, g in groups.group_of.items()],
              ("computed_at", "region", "pool", "group_id", "topology_group", "max_phi"))
    ch.insert("correlation_group_changes",
              [(now, region, c.kind, list(c.pools), list(c.groups), c.phi, c.joint_windows, list(c.windows))
               for c in groups.changes],
              ("computed_at", "region", "kind", "pools", "groups", "phi", "joint_windows", "windows"))


def publish_groups(pg: Postgres, region: str, now: datetime, groups: Groups) -> None:
    """Replace the region's groups in force in one transaction."""
    replace_in_force(pg, "correlation_groups", region, ("region", "pool", "group_id", "phi", "computed_at"),
                     [(region, p, g, groups.max_phi.get(p), now) for p, g in groups.group_of.items()])


def groups_in_force(pg: Postgres, region: str) -> dict[str, str]:
    """pool -> group id of the groups in force (what the ranking stores beside each pool's inputs)."""
    with pg.connection() as conn:
        rows = conn.execute("SELECT pool, group_id FROM correlation_groups WHERE region = %s", (region,)).fetchall()
    return {str(p): str(g) for p, g in rows}
