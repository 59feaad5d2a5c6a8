"""The code location's asset graph as plain data (asset keys, deps, groups, partitions, checks; jobs and the
assets they select; schedules with their cron and default status; sensors), for the snapshot test.

Regenerate the snapshot after an intended change, and review the diff:

    PYTHONPATH=. .venv/bin/python -m tests.orchestration.asset_graph > tests/orchestration/asset_graph.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["SNAPSHOT", "asset_graph", "render"]

SNAPSHOT = Path(__file__).with_name("asset_graph.json")


def asset_graph(defs: Any) -> dict[str, Any]:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "group": node.group_name,
            "partitions": str(node.partitions_def) if node.partitions_def else None,
            "checks": sorted(c.name for c in node.check_keys),
        }
    jobs = {job.name: sorted(k.to_user_string() for k in job.asset_layer.selected_asset_keys)
            for job in repo.get_all_jobs() if not job.name.startswith("__")}
    schedules = {s.name: {"job": s.job_name, "cron": s.cron_schedule, "timezone": s.execution_timezone,
                          "default_status": s.default_status.value} for s in repo.schedule_defs}
    sensors = {s.name: {"jobs": sorted(j.name for j in s.jobs) if s.has_jobs else [],
                        "minimum_interval_seconds": s.minimum_interval_seconds,
                        "default_status": s.default_status.value} for s in repo.sensor_defs}
    return {"assets": assets, "jobs": jobs, "schedules": schedules, "sensors": sensors}


def render(graph: dict[str, Any]) -> str:
    return json.dumps(graph, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    from orchestration.definitions import build_definitions

    print(render(asset_graph(build_definitions())), end="")
