"""Real ``sco-agent`` processes on simulated nodes, booted from the user-data the controller sent.

The demo's controllers run with ``--agent-credentials stack --agent-nats-url stack --metadata-url
<region>/metadata/{instance}``: every launch request carries the controller's cloud-config (the partition's signed
agent bundle, the stack's NATS relay without credentials, the region's metadata endpoint, a fresh password) and,
once the region has named the instances, the controller mints each one's own NATS user with that password. The
simulated region keeps what each launch sent and serves it back as Nova does (``UserDataReadback``).

For such an instance ``UserDataAgents.boot`` does what the node does:

1. the datasource's half: the user-data READ BACK from the region for that instance (nothing rendered here);
2. cloud-init's half: the template rendered with the instance's ``v1`` data and its ``write_files`` laid out
   under ``<root>/<instance>/`` (``sco.demo.cloudconfig``: no cloud-init needed on a newcomer's machine); the
   image's half: the bundle-signing public key and the node-bound ServiceAccount token at their paths;
3. the unit's half: ``sco-agent check`` on those files (a node that fails it boots no agent), once the relay
   accepts the instance's own user with the password in its user-data (the controller mints it just after the
   launch returns; an agent started earlier would be refused and back off), then ``sco-agent run`` with the
   unit's environment file (``agent.env``, paths re-rooted).

A simulated node has no scheduler of its own: the node and its pods live in a Kubernetes API double speaking
the real wire protocol (``sco.demo.kubeapi``), which the agent's own Kubernetes adapter drives (taint, cordon,
evict); a small kubelet here ends an evicted pod after its workload's checkpoint time (0.5–2 s). Only instances
of Kubernetes workloads qualify (a Slurm workload's user-data names Slurm, which runs only on the test bed).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from contracts.agent_userdata import AGENT_ENV_PATH, NATS_PASSWORD_PATH, USERDATA_PATH
from contracts.bundle_wire import AGENT_BUNDLE
from contracts.provider import UserDataReadback
from contracts.subjects import agent_nats_name
from controllers.controller.userdata import KUBE_TOKEN_PATH
from sco.stack.natsserver import nats_accepts

from .cloudconfig import instance_v1, lay_out
from .cloudconfig import render as render_template
from .kubeapi import KubeApiDouble

__all__ = ["PUBLIC_KEY_PATH", "BootedAgent", "Launch", "UserDataAgents", "launch_password"]

PUBLIC_KEY_PATH = "/etc/sco/bundle-signing.pub"  # baked into the image (deploy/agent/sco-agent.service)
STATE_PATH = "/var/lib/sco"
NAMESPACE = "demo"
REPO = Path(__file__).resolve().parents[2]


def launch_password(user_data: str | None) -> str | None:
    """The NATS password a launch's cloud-config carries (its ``/etc/sco/nats.password`` file), or None."""
    if not user_data:
        return None
    try:
        doc = yaml.safe_load(user_data)  # the jinja header is a YAML comment; the placeholders sit in strings
    except yaml.YAMLError:
        return None
    files = doc.get("write_files") if isinstance(doc, dict) else None
    for entry in files if isinstance(files, list) else []:
        if isinstance(entry, dict) and entry.get("path") == NATS_PASSWORD_PATH:
            content = str(entry.get("content", ""))
            return base64.b64decode(content).decode() if entry.get("encoding") in ("b64", "base64") else content
    return None


@dataclass(frozen=True)
class Launch:
    """One instance the controller launched, as the provider lists it."""

    instance_id: str
    region: str
    partition: str
    pool: str | None
    workload: str
    launched_at: datetime | None = None


@dataclass
class BootedAgent:
    launch: Launch
    hostname: str
    root: Path
    files: dict[str, Path]
    process: subprocess.Popen[bytes]
    checked: str                   # what `sco-agent check` said
    user_data: str                 # what the launch sent, as the region served it back


@dataclass
class UserDataAgents:
    provider: UserDataReadback     # the region: what each launch sent (the controller's cloud-config)
    bundle_root: Path              # <out> of `sco contracts compile`: which workloads qualify, their pods' labels
    public_key: Path               # the bundle-signing public key (baked into the image)
    root: Path                     # the nodes' file systems: <root>/<instance>/etc/sco/...
    seed: int = 1
    units_per_node: int = 2
    credential_wait_s: float = 60.0  # how long a boot waits for the controller's NATS credential
    kube: KubeApiDouble | None = None
    booted: dict[str, BootedAgent] = field(default_factory=dict)
    _kubelet: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)  # boots run in threads side by side

    def _bundle(self, partition: str) -> dict[str, Any]:
        payload: dict[str, Any] = json.loads((self.bundle_root / partition / AGENT_BUNDLE).read_bytes())
        return payload

    def entry(self, partition: str, workload: str) -> tuple[str, dict[str, Any]] | None:
        """The workload's ``(ref, entry)`` in its partition's agent bundle; None when it has none."""
        workloads = self._bundle(partition)["workloads"]
        return next(((ref, w) for ref, w in sorted(workloads.items()) if w["workload"] == workload), None)

    def qualifies(self, partition: str, workload: str) -> bool:
        """A Kubernetes workload: its node's agent drains through the API double."""
        found = self.entry(partition, workload)
        return found is not None and found[1].get("scheduler") == "kubernetes"

    def _node_files(self, launch: Launch, hostname: str) -> tuple[Path, dict[str, Path], str]:
        """The user-data the launch sent, read back from the region, rendered and laid out as cloud-init would,
        plus the image's files."""
        text = self.provider.user_data(launch.instance_id)
        if text is None:
            raise RuntimeError(f"the launch of {launch.instance_id} sent no user-data: the controller needs the "
                               "partition's agent bundle beside its controller bundle")
        root = self.root / launch.instance_id
        shutil.rmtree(root, ignore_errors=True)
        files = lay_out(render_template(text, instance_v1(launch.instance_id, hostname, launch.region)), root)
        for path, data in ((PUBLIC_KEY_PATH, self.public_key.read_bytes()), (KUBE_TOKEN_PATH, b"node-bound\n")):
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            files[path] = target
        (root / "user-data.txt").write_text(text)  # what the launch sent, for the curious
        return root, files, text

    def _await_credential(self, launch: Launch, files: dict[str, Path]) -> None:
        """Return once the relay named in the user-data accepts the instance's own NATS user with the password
        the user-data carries (the controller mints it after the launch returns). No relay: nothing to wait for.

        Raises:
            RuntimeError: not accepted within ``credential_wait_s`` (the controller minted none).
        """
        urls = json.loads(files[USERDATA_PATH].read_text()).get("nats_urls") or []
        secret = files.get(NATS_PASSWORD_PATH)
        if not urls or secret is None:
            return
        port = urllib.parse.urlsplit(urls[0]).port or 4222
        user, password = agent_nats_name(launch.region, launch.instance_id), secret.read_text()
        deadline = time.monotonic() + self.credential_wait_s
        while not nats_accepts(port, user, password):
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{urls[0]} did not accept {user} with the password in its user-data within "
                                   f"{self.credential_wait_s:.0f} s: the controller minted no NATS credential for "
                                   "it (run it with --agent-credentials stack)")
            time.sleep(0.2)

    def _env(self, root: Path, files: dict[str, Path]) -> dict[str, str]:
        """The unit's environment: its ``agent.env`` (paths re-rooted) and the node-local settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCO_AGENT_")}
        for line in files[AGENT_ENV_PATH].read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                env[key] = ":".join(str(root / p.lstrip("/")) if p.startswith("/") else p for p in value.split(":"))
        env.update({"SCO_AGENT_KUBE_API": self._kube().url, "SCO_AGENT_KUBE_TOKEN_FILE": str(files[KUBE_TOKEN_PATH]),
                    "SCO_AGENT_LOCAL_DRAIN_COMMAND": "true", "SCO_AGENT_SPOOL_FSYNC": "false",
                    "SCO_AGENT_METRICS_PORT": "0"})
        return env

    def _argv(self, command: str, root: Path, files: dict[str, Path]) -> list[str]:
        return [sys.executable, "-m", "agent.cli", command, "--userdata", str(files[USERDATA_PATH]),
                "--public-key", str(files[PUBLIC_KEY_PATH]), "--state-dir", str(root / STATE_PATH.lstrip("/"))]

    def boot(self, launch: Launch) -> BootedAgent:
        """Read back, render, lay out, check and start the instance's agent (blocking: call it in a thread).

        Raises:
            RuntimeError: the launch sent no user-data, ``sco-agent check`` refused the files (its message says
                why), or the instance's NATS credential was never minted. ``ProviderError``: the region did not
                serve the user-data.
        """
        hostname = f"node-{launch.instance_id[:8]}"
        root, files, text = self._node_files(launch, hostname)
        env = self._env(root, files)
        check = subprocess.run(self._argv("check", root, files), capture_output=True, text=True, env=env,
                               cwd=REPO, timeout=60)
        if check.returncode != 0:
            raise RuntimeError(f"sco-agent check refused the user-data of {launch.instance_id}: "
                               f"{check.stderr.strip()[-300:]}")
        self._await_credential(launch, files)
        self._node(launch, hostname)
        with (root / "agent.log").open("wb") as log:  # the child holds its own descriptor
            process = subprocess.Popen([*self._argv("run", root, files), "--metrics-port", "0"], stdout=log,
                                       stderr=subprocess.STDOUT, env=env, cwd=REPO)
        booted = BootedAgent(launch, hostname, root, files, process, check.stdout.strip(), text)
        self.booted[launch.instance_id] = booted
        return booted

    # --- the simulated node in the Kubernetes API double --------------------------------------------
    def _kube(self) -> KubeApiDouble:
        """The API double (started with the first node) and its kubelet."""
        with self._lock:
            if self.kube is None:
                self.kube = KubeApiDouble(graceful_pod_deletion=True)
                self._kubelet = threading.Thread(target=self._kubelet_loop, name="demo-kubelet", daemon=True)
                self._kubelet.start()
            return self.kube

    def _node(self, launch: Launch, hostname: str) -> None:
        """The node and its running pods (one per unit of the workload), started since the launch."""
        kube = self._kube()
        found = self.entry(launch.partition, launch.workload)
        if found is None:
            return
        ref, entry = found
        rng = random.Random(f"{self.seed}:{launch.instance_id}")
        now = datetime.now(UTC)
        booted = launch.launched_at.replace(tzinfo=launch.launched_at.tzinfo or UTC) if launch.launched_at else now
        up_s = max(0.0, (now - booted).total_seconds())
        kube.put_object("Node", {"metadata": {"name": hostname, "labels": {"sco.io/instance": launch.instance_id}},
                                 "spec": {}})
        for i in range(self.units_per_node):
            started = (now - timedelta(seconds=up_s * rng.random())).strftime("%Y-%m-%dT%H:%M:%SZ")
            kube.put_object("Pod", {
                "metadata": {"name": f"{hostname}-u{i}", "namespace": NAMESPACE, "labels": {
                    "sco.io/contract": ref.split("@", 1)[0], "sco.io/contract-version": str(entry["version"])}},
                "spec": {"nodeName": hostname},
                "status": {"phase": "Running", "startTime": started,
                           "conditions": [{"type": "Ready", "status": "True"}]}})

    def _kubelet_loop(self) -> None:
        """Ends each evicted pod (it has a deletionTimestamp) after its workload checkpoints: 0.5–2 s."""
        due: dict[str, float] = {}
        rng = random.Random(self.seed)
        while not self._stopping.wait(0.2):
            kube = self.kube
            if kube is None:
                continue
            for pod in kube.list_objects("Pod", NAMESPACE):
                name = pod["metadata"]["name"]
                if pod["metadata"].get("deletionTimestamp"):
                    due.setdefault(name, time.monotonic() + rng.uniform(0.5, 2.0))
                    if due[name] <= time.monotonic():
                        kube.delete_object("Pod", name, NAMESPACE)
                        due.pop(name, None)

    def stop(self, instance_id: str) -> None:
        """Stop the instance's agent (SIGTERM, then SIGKILL after 10 s) and remove its node from the API."""
        booted = self.booted.pop(instance_id, None)
        if booted is None:
            return
        booted.process.terminate()
        try:
            booted.process.wait(10)
        except subprocess.TimeoutExpired:
            booted.process.kill()
            booted.process.wait(5)
        if self.kube is not None:
            for pod in self.kube.list_objects("Pod", NAMESPACE):
                if pod.get("spec", {}).get("nodeName") == booted.hostname:
                    self.kube.delete_object("Pod", pod["metadata"]["name"], NAMESPACE)
            self.kube.delete_object("Node", booted.hostname)

    def close(self) -> None:
        """Stop every booted agent and the simulated kubelet."""
        for iid in list(self.booted):
            self.stop(iid)
        self._stopping.set()
        if self._kubelet is not None:
            self._kubelet.join(timeout=5)
        if self.kube is not None:
            with contextlib.suppress(Exception):
                self.kube.stop()
            self.kube = None
