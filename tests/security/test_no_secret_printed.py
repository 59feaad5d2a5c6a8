"""No command prints a secret: ``sco up --nats-cluster 3`` (a fresh start and a reuse), ``sco status`` and
``sco down``, in text and ``--json``, print every URL with ``***`` for its password — each member of the NATS
cluster's included — and none of the secrets in ``credentials.json`` appears anywhere in their output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest

from testkit.paths import REPO

pytestmark = pytest.mark.services


def _sco(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCO_")}
    env["SCO_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "sco.cli", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=180)


def _secrets(home: Path) -> list[str]:
    doc = json.loads((home / "credentials.json").read_text())
    found = [v for section in doc.values() if isinstance(section, dict) for v in section.values()]
    return [form for s in found for form in {s, quote(s, safe="")}]


def test_no_stack_command_prints_a_password_in_text_or_json() -> None:
    # not pytest's tmp_path: another pytest session resets /tmp/pytest-of-<user> to 0700 under the servers
    home = Path(tempfile.mkdtemp(prefix="sco-secrets-")) / ".sco"
    runs: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        for args in (("up", "--fast", "--nats-cluster", "3", "--no-migrate"),
                     ("up", "--nats-cluster", "3", "--json", "--no-migrate"), ("status",), ("status", "--json")):
            runs[" ".join(args)] = _sco(home, *args)
    finally:
        runs["down --json"] = _sco(home, "down", "--json")
    secrets = _secrets(home)
    shutil.rmtree(home.parent, ignore_errors=True)
    assert len(secrets) >= 15
    for command, done in runs.items():
        assert done.returncode == 0, (command, done.stderr[-2000:])
        output = done.stdout + done.stderr
        leaked = [s[:4] + "…" for s in secrets if s in output]
        assert not leaked, f"`sco {command}` printed {len(leaked)} secret(s)"
    nats = next(r for r in json.loads(runs["status --json"].stdout) if r["name"] == "nats")
    assert nats["url"].count(":***@") == 3, nats["url"]   # every member's URL, redacted
