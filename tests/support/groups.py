"""Fail loudly when ``--dist loadgroup`` stops grouping.

``make test`` runs on two xdist workers; tests that share a system test bed (the Slurm nodes, the Ceph buckets,
the OpenStack project) or a long session fixture carry one ``xdist_group`` so that they run in order on one
worker. xdist groups by suffixing each node id with ``@<group>`` in the worker; pytest 9.2 silently ignores
that mutation (pytest-dev/pytest-xdist#1386), and two Slurm tests then drain each other's nodes. This check
runs after xdist's own hook in every worker and fails the session instead of letting the beds race.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_collection_modifyitems"]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):
        return  # not an xdist worker running --dist loadgroup
    ungrouped = [item.nodeid for item in items
                 if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(
            f"--dist loadgroup is not grouping ({len(ungrouped)} marked tests without an @group node id, e.g. "
            f"{ungrouped[0]}): this pytest breaks xdist's grouping; install the version in "
            "requirements/constraints.txt (make venv)")
