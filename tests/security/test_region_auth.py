"""The simulated region's HTTP API authenticates: a local user without a credential lists nothing, reads no
user-data (it carries a live per-instance NATS password) and reclaims nothing (401, ``SIM001``); the drill
identity reclaims but launches nothing; an instance reads its own user-data and no other's (403, ``SIM002``);
the controller does everything. ``sco sim region serve`` as a process, with the tokens of a stack's
``credentials.json``; every refusal is in its log with its code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from contracts.provider import LaunchRequest, OwnerTags
from contracts.provider_errors import ProviderError
from controllers.providers.simulated import SimulatedProvider
from controllers.simregion.auth import instance_token
from sco.stack import credentials
from tests.support.ports import free_port

pytestmark = pytest.mark.services
SECRET_USER_DATA = "#cloud-config\nwrite_files: [{path: /etc/sco/nats.password, content: s3cret-per-instance}]\n"


@dataclass(frozen=True)
class Region:
    url: str
    secrets: dict[str, str]
    log: Path


@pytest.fixture
def region(tmp_path: Path) -> Iterator[Region]:
    home = tmp_path / ".sco"
    home.mkdir()
    secrets = credentials.load_or_create(home).region
    port = free_port()
    log = tmp_path / "region.log"
    env = {k: v for k, v in os.environ.items() if k != "SCO_REGION_TOKEN"}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "sco", "sim", "region", "serve", "--nats", "none", "--port",
                                 str(port), "--home", str(home), "--pools", "20"], stdout=out,
                                stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield Region(url, secrets, log)
    finally:
        proc.terminate()
        proc.wait(10)


def _call(url: str, method: str, path: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _launch_two(region: Region) -> list[str]:
    controller = SimulatedProvider(region.url, region="r1", token=region.secrets["controller"])
    pool = next(p.pool_id for p in controller.catalogue().pools if p.purchase_model.value == "reclaimable")
    owner = OwnerTags(workload="etl", pool=pool, partition="r1/batch", generation=1)
    launched = controller.launch(LaunchRequest(pool_id=pool, count=2, owner=owner, user_data=SECRET_USER_DATA))
    return [i.instance_id for i in launched]


def test_without_a_credential_a_local_user_lists_reads_and_reclaims_nothing(region: Region) -> None:
    a, _ = _launch_two(region)
    tries = {"list": ("GET", "/v1/instances", None), "user-data": ("GET", f"/v1/instances/{a}/user-data", None),
             "reclaim": ("POST", "/v1/reclaim", {"instances": [a], "drill": False}),
             "hall": ("POST", "/v1/halls/h1/reclaim", None), "terminate": ("DELETE", f"/v1/instances/{a}", None)}
    for name, (method, path, body) in tries.items():
        for token in (None, "guessed", instance_token("guessed-key", a)):
            status, doc = _call(region.url, method, path, token, body)
            assert (status, doc["code"]) == (401, "SIM001"), (name, token, status, doc)
            assert SECRET_USER_DATA not in json.dumps(doc)
    status, health = _call(region.url, "GET", "/healthz")            # open, and no secret in it
    assert status == 200 and "instances" not in health
    controller = SimulatedProvider(region.url, region="r1", token=region.secrets["controller"])
    (found,) = [i for i in controller.list_instances({"workload": "etl"}) if i.instance_id == a]
    assert found.status.value in ("active", "building")             # nothing was reclaimed or terminated
    assert "SIM001 POST /v1/reclaim by an unauthenticated caller" in region.log.read_text()


def test_user_data_goes_only_to_the_instance_itself_or_the_controller(region: Region) -> None:
    a, b = _launch_two(region)
    own = instance_token(region.secrets["instance_key"], a)
    status, doc = _call(region.url, "GET", f"/v1/instances/{a}/user-data", own)
    assert status == 200 and doc["user_data"]
    for path in (f"/v1/instances/{b}/user-data", "/v1/instances", "/v1/reclaim"):
        status, doc = _call(region.url, "GET" if path != "/v1/reclaim" else "POST", path, own,
                            {"instances": [b]} if path == "/v1/reclaim" else None)
        assert (status, doc["code"]) == (403, "SIM002"), (path, doc)
    drill = SimulatedProvider(region.url, region="r1", token=region.secrets["drill"])
    with pytest.raises(ProviderError, match="SIM002: drill may not read the user-data"):
        drill.user_data(a)
    controller = SimulatedProvider(region.url, region="r1", token=region.secrets["controller"])
    assert controller.user_data(b) == SECRET_USER_DATA
    assert f"SIM002 GET /v1/instances/{b}/user-data by instance:{a}" in region.log.read_text()


def test_the_drill_identity_reclaims_but_launches_nothing(region: Region) -> None:
    a, _ = _launch_two(region)
    drill = SimulatedProvider(region.url, region="r1", token=region.secrets["drill"])
    assert [i.instance_id for i in drill.list_instances({"workload": "etl"})]
    assert drill.reclaim((a,), drill=True).instances == (a,)
    status, doc = _call(region.url, "POST", "/v1/launch", region.secrets["drill"], {"pool_id": "x", "count": 1})
    assert (status, doc["code"]) == (403, "SIM002")


def test_serve_refuses_to_start_without_credentials_unless_told_no_auth(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SCO_HOME"}
    done = subprocess.run([sys.executable, "-m", "sco", "sim", "region", "serve", "--nats", "none", "--home",
                           str(tmp_path / "none"), "--port", str(free_port())], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode != 0 and "SIM005" in done.stderr + done.stdout and "--no-auth" in done.stderr + done.stdout
