"""Compile 220 contracts against the example catalogue (the simulated region's 141 reclaimable pools); report
the time per contract.

Baseline measured in the same run: parsing the same 220 YAML files with PyYAML's safe_load (the floor any
YAML-based compiler pays). Figures: median of 5 rounds each.

    .venv/bin/python -m bench.compile_contracts
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from bench._cli import no_arguments
from contracts.compiler import check_repo

EXAMPLES = Path(__file__).resolve().parents[1] / "deploy" / "contracts"
TEMPLATES = sorted((EXAMPLES / "workloads").glob("*.yaml"))


def make_repo(root: Path, count: int = 220) -> None:
    (root / "workloads").mkdir(parents=True)
    # the simulated region's catalogue (`sco sim region catalogue`): 141 reclaimable pools
    shutil.copy(EXAMPLES / "pools.csv", root / "pools.csv")
    texts = [t.read_text() for t in TEMPLATES]
    for i in range(count):
        doc = yaml.safe_load(texts[i % len(texts)])
        doc["workload"] = f"{doc['workload'][:50]}-{i:03d}"
        (root / "workloads" / f"w{i:03d}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def timed(fn: object, rounds: int = 5) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    no_arguments("bench.compile_contracts", __doc__)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root)
        files = sorted((root / "workloads").glob("*.yaml"))
        result = check_repo(root)
        assert len(result.workloads) == 220 and not result.errors, [f.render() for f in result.errors][:3]
        reclaimable = sum(1 for line in (root / "pools.csv").read_text().splitlines() if ",reclaimable," in line)
        parse = timed(lambda: [yaml.safe_load(f.read_text()) for f in files])
        compile_ = timed(lambda: check_repo(root))
    n = len(files)
    print(f"contracts: {n}, pools: {reclaimable} reclaimable (+ committed)")
    print(f"baseline  yaml.safe_load only : {parse * 1000:8.1f} ms total, {parse / n * 1000:6.2f} ms/contract")
    print(f"sco compile (schema+tiers+rules): {compile_ * 1000:8.1f} ms total, {compile_ / n * 1000:6.2f} ms/contract")
    print(f"ratio compile / parse-only      : {compile_ / parse:8.2f}x")
    print(f"rate                            : {n / compile_:8.0f} contracts/s")


if __name__ == "__main__":
    main()
