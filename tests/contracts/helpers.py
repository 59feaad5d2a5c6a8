"""Builders for contract tests: a valid contract per tier as a dict, written to YAML on demand."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from contracts.compiler import CompiledWorkload, check_text
from contracts.findings import Finding
from contracts.pools import PoolCatalogue, load_catalogue
from contracts.settings import CompilerSettings
from testkit.paths import REPO

EXAMPLES = REPO / "deploy" / "contracts"


def catalogue() -> PoolCatalogue:
    return load_catalogue(EXAMPLES / "pools.csv")


def to_yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def compile_doc(doc: dict[str, Any], settings: CompilerSettings | None = None,
                cat: PoolCatalogue | None = None) -> tuple[CompiledWorkload | None, list[Finding]]:
    return check_text(to_yaml(doc), "contract.yaml", cat or catalogue(), settings or CompilerSettings())


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def write_repo(root: Path, docs: dict[str, str], with_catalogue: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (root / name).write_text(text, encoding="utf-8")
    if with_catalogue:
        (root / "pools.csv").write_text((EXAMPLES / "pools.csv").read_text(encoding="utf-8"), encoding="utf-8")
    return root


D = Decimal
