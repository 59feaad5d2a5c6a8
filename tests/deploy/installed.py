"""SCO as a platform team installs it: the wheel built from this checkout, installed into a fresh virtual
environment outside the source tree (what deploy/images/Dockerfile does), for tests that run its programs.

Third-party packages come from the test's own environment through a ``.pth`` file (installing 160 packages
per run would take minutes and the network); their console scripts are copied with the fresh interpreter in
the shebang. Our own code comes from the wheel only: ``InstalledSco.env()`` carries no ``PYTHONPATH``, the
working directory is outside the checkout, and the editable install of the test environment is not seen
(a path in a ``.pth`` file is added to ``sys.path`` without processing the ``.pth`` files found there)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from testkit.paths import REPO

__all__ = ["OUR_PACKAGES", "InstalledSco", "build_wheel", "install"]

OUR_PACKAGES = ("contracts", "stores", "agent", "controllers", "distributor", "orchestration", "reports", "workload",
                "sco")
# what the build never needs and must not see: at the top, a built tree, a venv, caches, the tests; anywhere,
# byte code; in the dbt project, its run-time output
_TOP = {".git", ".venv", "build", "dist", ".sco", ".mypy_cache", ".ruff_cache", ".pytest_cache", "tests", "bench",
        "docs", "out", "demo-reports"}
_DBT_OUTPUT = {"target", "logs", "dbt_packages"}


def _not_source(directory: str, names: list[str]) -> set[str]:
    here = Path(directory)
    skip = {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}
    if here == REPO:
        skip |= _TOP.intersection(names)
    if here == REPO / "dbt":
        skip |= _DBT_OUTPUT.intersection(names)
    return skip


def build_wheel(out: Path) -> Path:
    """``pip wheel`` of a copy of the checkout (the build writes ``build/`` and ``*.egg-info`` beside it)."""
    source = out / "source"
    shutil.copytree(REPO, source, ignore=_not_source, symlinks=True)
    wheels = out / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(wheels), f"{source}/"], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = wheels.glob("sco-*.whl")
    return wheel


@dataclass(frozen=True)
class InstalledSco:
    """A fresh environment with the wheel installed: its ``bin/`` and the directory to run commands from."""

    venv: Path
    workdir: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of an installed process: no PYTHONPATH, the venv's ``bin`` first on PATH."""
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "SCO_", "DAGSTER"))}
        return {**base, "PATH": f"{self.bin}:{base.get('PATH', '/usr/bin:/bin')}", "HOME": str(self.workdir),
                "SCO_DBT_DIR": str(self.workdir / "dbt"), **(extra or {})}

    def run(self, *argv: str, extra: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=self.workdir, env=self.env(extra), capture_output=True, text=True,
                              timeout=timeout, check=False)


def _copy_scripts(into: Path, python: Path) -> None:
    """The third-party console scripts (dagster, dagster-daemon, dagster-webserver, dbt …) for this venv."""
    here = Path(sys.executable).parent
    for script in here.iterdir():
        if script.name in ("sco", "sco-agent") or not script.is_file() or (into / script.name).exists():
            continue
        try:
            first, rest = script.read_text().split("\n", 1)
        except (UnicodeDecodeError, ValueError):
            continue
        if first.startswith("#!") and Path(first[2:].strip()).parent == here:
            (into / script.name).write_text(f"#!{python}\n{rest}")
            (into / script.name).chmod(0o755)


def install(wheel: Path, root: Path) -> InstalledSco:
    """A venv at ``root/venv`` with ``wheel`` installed (``--no-deps``) and the test environment's packages."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "zz-third-party.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                    "--no-index", str(wheel)], check=True, capture_output=True, text=True, timeout=300)
    _copy_scripts(venv / "bin", python)
    workdir = root / "work"
    workdir.mkdir()
    return InstalledSco(venv, workdir)
