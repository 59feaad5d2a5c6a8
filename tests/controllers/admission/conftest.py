"""Signed bundles of the example contract repository, compiled once for the admission tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from sco.cli import main
from testkit.paths import REPO

EXAMPLES = REPO / "deploy" / "contracts"


@pytest.fixture(scope="session")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<dir>/keys/*.pem`` and ``<dir>/bundles/r1/{k8s-prod,slurm-hpc}/controller-bundle.json``."""
    root = tmp_path_factory.mktemp("admission")
    assert main(["keys", "init", "--dir", str(root / "keys")]) == 0
    assert main(["contracts", "compile", str(EXAMPLES), "--out", str(root / "bundles"),
                 "--key", str(root / "keys" / "signing.key.pem"),
                 "--governance-key", str(root / "keys" / "governance.key.pem")]) == 0
    return root
