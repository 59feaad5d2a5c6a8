"""Where the system test beds are: the tests' one reader of their locations (deploy/testbed/*/up).

The Slurm and Ceph beds live under this checkout's ``.sco/testbed/<name>/`` on free ports picked by their
``up``, which records them in ``<dir>/env.json`` (the Slurm bed's slurmrestd URL too: ``slurm_rest_url``); so
two clones on one machine each test against their own bed. ``SCO_SLURM_TESTBED_DIR``, ``SCO_CEPH_TESTBED_DIR`` and
``SCO_SLURM_CONF`` still point a test elsewhere.
The OpenStack bed is machine-wide: ``SCO_TESTBED_STATE`` (default ``/var/lib/sco-testbed/openstack``). The
cloud-init bed is Debian's ``cloud-init`` package (``deploy/testbed/cloudinit/up``): ``CLOUD_INIT`` is its command
(``SCO_CLOUD_INIT`` overrides), None when it is not installed.
The monitoring bed (deploy/testbed/monitoring/up) installs Debian's Prometheus and Alertmanager tools; ``tool``
finds each (``SCO_PROMTOOL``, ``SCO_AMTOOL``, ``SCO_PROMETHEUS``, ``SCO_ALERTMANAGER`` override the path).
The Patroni bed (deploy/testbed/patroni/up) installs Debian's Patroni, etcd and PostgreSQL 15; ``patroni_tools``
finds them (``SCO_PATRONI``, ``SCO_ETCD``, ``SCO_PATRONI_PG_BIN`` override), and tests/support/patroni.py starts a
cluster of its own from them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from testkit.paths import REPO

__all__ = [
    "CEPH_DIR",
    "CEPH_ENV",
    "CLOUD_INIT",
    "OPENSTACK_CLOUDS",
    "OPENSTACK_STATE",
    "SLURM_CONF",
    "SLURM_DIR",
    "SLURM_STATE",
    "bed_dir",
    "ceph_env",
    "patroni_tools",
    "slurm_env",
    "slurm_rest_url",
    "tool",
]


def bed_dir(name: str, override: str) -> Path:
    """The directory of test bed ``name``: ``$override`` when set, else ``<checkout>/.sco/testbed/<name>``."""
    return Path(os.environ.get(override) or REPO / ".sco" / "testbed" / name)


SLURM_DIR = bed_dir("slurm", "SCO_SLURM_TESTBED_DIR")
SLURM_STATE = SLURM_DIR / "env.json"
SLURM_CONF = os.environ.get("SCO_SLURM_CONF") or str(SLURM_DIR / "slurm.conf")
CEPH_DIR = bed_dir("ceph", "SCO_CEPH_TESTBED_DIR")
CEPH_ENV = CEPH_DIR / "env.json"
OPENSTACK_STATE = Path(os.environ.get("SCO_TESTBED_STATE") or "/var/lib/sco-testbed/openstack")
OPENSTACK_CLOUDS = OPENSTACK_STATE / "clouds.yaml"
CLOUD_INIT = os.environ.get("SCO_CLOUD_INIT") or shutil.which("cloud-init")


def slurm_env() -> dict[str, str]:
    """This process's environment with ``SLURM_CONF`` pointing at the Slurm test bed."""
    return {**os.environ, "SLURM_CONF": SLURM_CONF}


def slurm_rest_url() -> str:
    """The URL of the Slurm bed's slurmrestd (JWT auth, API v0.0.38); ``FileNotFoundError`` when the bed is down,
    ``KeyError`` when it was brought up before it had one (run deploy/testbed/slurm/up again)."""
    doc: dict[str, Any] = json.loads(SLURM_STATE.read_text())
    return str(doc["rest_url"])


def ceph_env() -> dict[str, Any]:
    """The Ceph bed's ``env.json`` (endpoint, conf, ports, S3 identities); ``FileNotFoundError`` when it is down."""
    doc: dict[str, Any] = json.loads(CEPH_ENV.read_text())
    return doc


def tool(name: str) -> str:
    """The path of a monitoring tool (``promtool``, ``amtool``, ``prometheus``, ``alertmanager``) installed by
    deploy/testbed/monitoring/up; ``FileNotFoundError`` naming the script when it is not there."""
    override = os.environ.get(f"SCO_{name.upper()}")
    found = override or shutil.which(name) or (shutil.which("prometheus-alertmanager") if name == "alertmanager"
                                               else None)
    if not found:
        raise FileNotFoundError(f"{name} is not installed: run deploy/testbed/monitoring/up (as root)")
    return found


def patroni_tools() -> dict[str, str]:
    """``patroni``, ``etcd`` and ``pg_bin`` (PostgreSQL 15's bin directory) installed by deploy/testbed/patroni/up;
    ``FileNotFoundError`` naming the script when one is missing."""
    pg_bin = os.environ.get("SCO_PATRONI_PG_BIN") or "/usr/lib/postgresql/15/bin"
    found = {"patroni": os.environ.get("SCO_PATRONI") or shutil.which("patroni"),
             "etcd": os.environ.get("SCO_ETCD") or shutil.which("etcd"),
             "pg_bin": pg_bin if (Path(pg_bin) / "postgres").exists() else None}
    missing = [name for name, path in found.items() if not path]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not installed: run deploy/testbed/patroni/up (as root)")
    return {name: str(path) for name, path in found.items()}
