"""Helpers for the admission tests (the signed bundles are the ``signed`` fixture in conftest.py)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["sync_args"]


def sync_args(root: Path, partition: str, *extra: str) -> list[str]:
    return ["contracts", "sync-admission", "--bundle", str(root / "bundles" / partition / "controller-bundle.json"),
            "--key", str(root / "keys" / "signing.pub.pem"),
            "--governance-key", str(root / "keys" / "governance.pub.pem"), *extra]
