"""The build's one addition to pyproject.toml: the dbt project (``dbt/``, kept at the repository root where dbt
users look for it) goes into the wheel as ``orchestration/dbt_project``, where ``orchestration.finance_models``
finds it in an installed package. Its run-time output (``target/``, ``logs/``) and local state stay out."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

_SKIP = shutil.ignore_patterns("target", "logs", "dbt_packages", ".user.yml", "__pycache__")


class BuildWithDbtProject(build_py):
    """``build_py`` plus the dbt project copied under the orchestration package."""

    def run(self) -> None:
        super().run()
        source = Path(__file__).resolve().parent / "dbt"
        if not (source / "dbt_project.yml").is_file():  # an sdist built without it: say so, never ship half
            raise SystemExit(f"dbt project missing at {source}: the wheel would have no finance models")
        target = Path(self.build_lib) / "orchestration" / "dbt_project"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, ignore=_SKIP)


setup(cmdclass={"build_py": BuildWithDbtProject})
