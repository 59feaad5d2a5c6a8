"""The agent's footprint in its own minimal environment: RSS and idle CPU (budget 40 MiB, 20 millicores;
goal ≤ 5 millicores idle).

Builds a virtualenv that holds only what ``pip install sco[agent]`` needs at run time — nats-py and
cryptography (with cffi) from PyPI, pinned by requirements/constraints.txt — plus copies of ``agent/`` and
the stdlib-only ``contracts`` modules it imports, found by following its imports (nothing else of ours: the
run proves the agent needs nothing else). Exits non-zero, with the agent's own error, when the agent does not
import or does not connect there, or when any figure could not be measured: no "nan MiB" with exit status 0,
and exits 1 with a FAIL line per figure over its budget (RSS after boot, after idle and at its peak; idle CPU).
Then runs ``sco-agent run`` there as a Kubernetes node agent against the API double, a real nats-server
authenticated as ``sco up`` runs it (``bench/nats_auth.py``: the agent presents its instance's minted
credential, the notice comes from the region's relay user),
a metadata endpoint polled every 5 s and a bundle distributor (refresh every 60 s), and measures:
RSS after boot, idle CPU over ``--idle`` seconds (metadata polls, NATS pings, refreshes included), and peak
RSS after draining on a notice. Baselines in the same run and venv: a bare interpreter, and one that has
imported nats-py and cryptography.

    .venv/bin/python -m bench.agent_footprint [--idle 60]
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from agent.config import userdata_document
from agent.model import NodeIdentity
from bench._cli import stop_on_signals
from bench.agent_notice_latency import ensure_stream
from bench.nats_auth import BenchNats, free_port
from contracts.canonical import canonical_bytes
from contracts.signing import KeyPair, generate_keypair, load_private_key, sign_blob
from contracts.subjects import notice_subject

REPO = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("SCO_AGENT_BENCH_VENV", "/tmp/sco-agent-minimal-venv"))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def minimal_env() -> dict[str, str]:
    """The environment for the minimal venv's interpreter: no PYTHONPATH leading back into this checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def pins() -> list[str]:
    wanted = {"nats-py", "cryptography", "cffi", "pycparser"}
    out = []
    for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines():
        name = line.split("==")[0].strip().lower()
        if name in wanted:
            out.append(line.strip())
    return out


def _contracts_imports(path: Path) -> set[str]:
    """The ``contracts`` modules one file imports (``from contracts.x import``, ``from contracts import x``, and
    ``from .x import`` / ``from . import x`` inside it)."""
    found: set[str] = set()
    inside = path.parent.name == "contracts"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module == "contracts" or (inside and node.level == 1
                                                                                and node.module is None)):
            found |= {a.name for a in node.names}  # from contracts import x / from . import x
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("contracts."):
                found.add(node.module.split(".")[1])
            elif inside and node.level == 1:
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("contracts.")}
    return found


def light_contracts() -> list[str]:
    """Every ``contracts`` module the agent reaches, following imports from ``agent/`` (file names)."""
    todo = set().union(*(_contracts_imports(f) for f in (REPO / "agent").rglob("*.py")))
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo |= _contracts_imports(REPO / "contracts" / f"{name}.py") - seen
    return ["__init__.py", *sorted(f"{n}.py" for n in seen)]


def check_imports(py: Path) -> None:
    """Every agent module imports in the minimal venv, or the benchmark stops here with the error."""
    code = ("import importlib, pkgutil, agent\n"
            "for m in pkgutil.walk_packages(agent.__path__, 'agent.'):\n"
            "    importlib.import_module(m.name)\n")
    done = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=VENV,
                          env={"PATH": os.environ.get("PATH", "")})
    if done.returncode != 0:
        raise SystemExit(f"agent_footprint: the agent does not import in its minimal venv {VENV}:\n"
                         f"{done.stderr.strip()[-2000:]}")


def build_venv() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    # every time: a venv built before a new run-time dependency gets it (a no-op when all are there)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins()], check=True,
                   env=minimal_env())
    src = VENV / "sco-agent-src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(REPO / "agent", src / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "contracts").mkdir(parents=True)
    for name in light_contracts():
        shutil.copy(REPO / "contracts" / name, src / "contracts" / name)
    site = next((VENV / "lib").glob("python3*/site-packages"))
    (site / "sco-agent-src.pth").write_text(str(src) + "\n")
    check_imports(py)
    return py


def installed(py: Path) -> list[str]:
    out = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                         capture_output=True, text=True, check=True, env=minimal_env(), cwd=VENV).stdout
    return sorted(line for line in out.splitlines() if not line.lower().startswith(("pip==", "setuptools==")))


def status(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0  # MiB
    return float("nan")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def baseline_rss(py: Path, code: str) -> float:
    proc = subprocess.Popen([str(py), "-c", code + "\nimport time; time.sleep(30)"], env=minimal_env(), cwd=VENV)
    time.sleep(2.0)
    rss = status(proc.pid, "VmRSS")
    proc.kill()
    proc.wait()
    return rss


NODE = NodeIdentity("r1", "r1/k8s", "i-bench", "kn1", "p", "kubernetes")


def signed_bundle(keys: KeyPair) -> tuple[bytes, bytes]:
    """The partition's agent bundle with one Kubernetes workload (3 s drain budget), and its signature."""
    entry = {"workload": "web", "version": "1", "tier": "t", "scheduler": "kubernetes", "drain_budget_s": 3,
             "drain_signal": "SIGTERM", "advisory_drain": False, "checkpoint_mode": "final", "framework": None,
             "checkpoint_interval_min": 30, "restart": "resume-from-checkpoint", "requeue": True,
             "max_unit_length_min": 60}
    raw = canonical_bytes({"apiVersion": "sco/v1", "kind": "AgentBundle", "partition": "r1/k8s", "generation": 1,
                           "issued_at": "2026-11-29T00:00:00Z", "source_digest": "sha256:" + "0" * 64,
                           "workloads": {"web@1": entry}})
    return raw, sign_blob(raw, load_private_key(keys.private_pem))


def start_agent(py: Path, tmp: Path, kube_url: str) -> tuple[subprocess.Popen[bytes], int]:
    """``sco-agent run`` from the user-data in ``tmp`` against the API double; its metrics port."""
    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "SCO_AGENT_KUBE_API": kube_url, "MALLOC_ARENA_MAX": "2",
           "SCO_AGENT_KUBE_TOKEN_FILE": str(tmp / "token"), "SCO_AGENT_LOCAL_DRAIN_COMMAND": "true"}
    proc = subprocess.Popen([str(py), "-m", "agent.cli", "run", "--userdata", str(tmp / "ud.json"),
                             "--public-key", str(tmp / "k.pub"), "--state-dir", str(tmp / "state"),
                             "--metrics-port", str(port)], env=env, cwd=tmp,
                            stdout=subprocess.DEVNULL, stderr=(tmp / "agent.err").open("wb"))
    return proc, port


def wait_connected(proc: subprocess.Popen[bytes], port: int, tmp: Path) -> None:
    """Until the agent's metrics say it is connected to NATS; exits non-zero with its error after 20 s."""
    metrics = f"http://127.0.0.1:{port}/metrics"
    body, end = "", time.monotonic() + 20
    while "\nsco_agent_nats_connected 1" not in body and time.monotonic() < end:
        try:
            with urllib.request.urlopen(metrics, timeout=1) as resp:
                body = resp.read().decode()
        except OSError:
            time.sleep(0.1)
    if proc.poll() is not None or "\nsco_agent_nats_connected 1" not in body:
        err = (tmp / "agent.err").read_text(errors="replace")[-2000:]
        raise SystemExit(f"agent_footprint: sco-agent did not come up and connect to NATS within 20 s "
                         f"(exit status {proc.poll()}):\n{err}")


def publish_notice(relay_url: str) -> None:
    """One notice for the bench's node, from the region's relay user (the one notice publisher)."""
    async def notify() -> None:
        import nats

        nc = await nats.connect(relay_url)
        now = time.time()
        doc = {"region": "r1", "instance_id": NODE.instance, "pool_id": "p", "hall": "h",
               "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
               "terminate_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 120)), "cause": "reclaim"}
        await nc.publish(notice_subject("r1", NODE.instance), json.dumps(doc).encode())
        await nc.flush()
        await nc.close()

    asyncio.run(notify())


def measure(proc: subprocess.Popen[bytes], idle: float, meta: Any, kube: Any, relay_url: str) -> dict[str, Any]:
    """RSS after boot, idle CPU over ``idle`` seconds, then a notice: drained? and RSS/peak after the drain."""
    time.sleep(3.0)
    out: dict[str, Any] = {"boot": status(proc.pid, "VmRSS")}
    cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
    polls0 = len([h for h in meta.hits if h == "/meta"])
    time.sleep(idle)
    out["idle_cpu"], out["idle_wall"] = cpu_seconds(proc.pid) - cpu0, time.monotonic() - t0
    out["polls"] = len([h for h in meta.hits if h == "/meta"]) - polls0
    out["idle"] = status(proc.pid, "VmRSS")
    publish_notice(relay_url)
    end = time.monotonic() + 15
    while kube.get_object("Pod", "w", "t") is not None and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(2.0)
    out["drained"] = kube.get_object("Pod", "w", "t") is None
    out["drain"], out["hwm"] = status(proc.pid, "VmRSS"), status(proc.pid, "VmHWM")
    return out


def run_agent(py: Path, idle: float) -> dict[str, Any]:
    """The agent in the minimal venv among its surroundings (the test doubles: metadata, distributor, API)."""
    from sco.demo.kubeapi import KubeApiDouble
    from testkit.jsonserver import JsonServer

    keys = generate_keypair()
    raw, sig = signed_bundle(keys)
    with tempfile.TemporaryDirectory() as tmp_s, KubeApiDouble() as kube:
        tmp = Path(tmp_s)
        nats_srv = BenchNats(tmp / "nats", "r1", [NODE.instance])  # authenticated, as `sco up` runs it
        meta, dist = JsonServer(), JsonServer()
        try:
            asyncio.run(ensure_stream(nats_srv.url))
            meta.set_json("/meta", {"instance_id": NODE.instance, "notices": []})
            dist.serve_bundle("/d/", raw, sig)
            kube.put_object("Node", {"metadata": {"name": "kn1"}, "spec": {}})
            kube.put_object("Pod", {"metadata": {"name": "w", "namespace": "t", "labels": {
                "sco.io/contract": "web", "sco.io/contract-version": "1"}}, "spec": {"nodeName": "kn1"},
                "status": {"phase": "Running"}})
            ud = userdata_document(NODE, raw, sig, [nats_srv.agent_url(NODE.instance)], meta.url + "/meta",
                                   dist.url + "/d/")
            (tmp / "ud.json").write_text(json.dumps(ud))
            (tmp / "k.pub").write_bytes(keys.public_pem)
            (tmp / "token").write_text("node-bound")
            proc, port = start_agent(py, tmp, kube.url)
            try:
                wait_connected(proc, port, tmp)
                return measure(proc, idle, meta, kube, nats_srv.relay_url)
            finally:
                proc.terminate()
                proc.wait(15)
        finally:
            meta.stop()
            dist.stop()
            nats_srv.stop()


RSS_BUDGET_MIB = 40.0
IDLE_BUDGET_MILLICORES = 20.0


def over_budget(m: dict[str, Any], millicores: float) -> list[str]:
    """The figures over their budget, each as ``name figure > budget`` (empty: every budget met). RSS is judged
    after boot, after the idle window and at its peak over the drain (VmHWM): the agent lives in all three."""
    misses = [f"RSS {label} {m[key]:.1f} MiB > {RSS_BUDGET_MIB:g} MiB"
              for key, label in (("boot", "after boot"), ("idle", "after idle"), ("hwm", "peak (VmHWM)"))
              if m[key] > RSS_BUDGET_MIB]
    if millicores > IDLE_BUDGET_MILLICORES:
        misses.append(f"idle CPU {millicores:.2f} millicores > {IDLE_BUDGET_MILLICORES:g} m")
    return misses


def report(packages: list[str], bare: float, libs: float, m: dict[str, Any]) -> int:
    """Prints the figures and a PASS/FAIL per budget; 1 when a figure is over its budget."""
    figures = {"bare": bare, "libs": libs, "boot": m["boot"], "idle": m["idle"], "drain": m["drain"],
               "hwm": m["hwm"]}
    unmeasured = [name for name, value in figures.items() if math.isnan(value)]
    idle_cpu, idle_wall = m["idle_cpu"], m["idle_wall"]
    millicores = idle_cpu / idle_wall * 1000
    print(f"minimal venv {VENV}: {', '.join(packages)}")
    print(f"baseline: bare interpreter RSS                    {bare:6.1f} MiB")
    print(f"baseline: interpreter + nats-py + cryptography    {libs:6.1f} MiB")
    print(f"sco-agent RSS after boot (NATS connected)         {m['boot']:6.1f} MiB   (budget 40 MiB)")
    print(f"sco-agent RSS after {idle_wall:.0f} s idle                     {m['idle']:6.1f} MiB")
    print(f"sco-agent RSS after a drain / peak (VmHWM)        {m['drain']:6.1f} / {m['hwm']:.1f} MiB   "
          f"drained={m['drained']}")
    print(f"agent over the libraries it needs                 {m['boot'] - libs:+6.1f} MiB")
    resolution = 1000.0 / CLK_TCK / idle_wall
    shown = f"{millicores:.2f}" if idle_cpu else f"< {resolution:.2f} (no clock tick)"
    print(f"idle CPU over {idle_wall:.0f} s: {idle_cpu * 1000:.0f} ms CPU = {shown} millicores "
          f"({m['polls']} metadata polls; resolution {resolution:.2f} m)   budget 20 m, goal <= 5 m")
    if unmeasured or not m["drained"]:
        raise SystemExit(f"agent_footprint: not measured: {', '.join(unmeasured) or '-'}; drained={m['drained']}")
    misses = over_budget(m, millicores)
    for miss in misses:
        print(f"FAIL  {miss}")
    if not misses:
        print(f"PASS  RSS within {RSS_BUDGET_MIB:g} MiB (boot, idle, peak) and idle CPU within "
              f"{IDLE_BUDGET_MILLICORES:g} millicores")
    return 1 if misses else 0


def main() -> int:
    stop_on_signals()  # a timeout's SIGTERM stops the servers this bench starts
    parser = argparse.ArgumentParser(prog="python -m bench.agent_footprint", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--idle", type=float, default=60.0, help="idle window in seconds")
    args = parser.parse_args()
    py = build_venv()
    packages = installed(py)
    bare = baseline_rss(py, "import sys")
    libs = baseline_rss(py, "import nats.aio.client, cryptography.hazmat.primitives.asymmetric.ec")
    return report(packages, bare, libs, run_agent(py, args.idle))


if __name__ == "__main__":
    sys.exit(main())
