"""A kustomize-built pod spec run as a local process: what the kubelet would do with it, minus the container.

``materialize`` turns one container of a built object into the command the image runs (our ENTRYPOINT, or the
container's ``command``, then its ``args``), the environment its ``env`` and ``envFrom`` Secrets give, and its
volumes as directories (a Secret's or ConfigMap's keys as files, an emptyDir, a PersistentVolumeClaim shared by
the pods that claim it), every mount path in the arguments and environment rewritten to its directory. Each
container port gets a free local port (pods have addresses of their own; here they share loopback): the
argument following a ``--…port`` flag that names the container port is rewritten, and the probes and the
PodMonitor reach the same local port through the port's name.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Launch", "materialize", "pod_specs"]


@dataclass
class Launch:
    """One container, ready to start: ``argv``, ``env``, its named ports on loopback, its probes."""

    name: str
    component: str
    argv: list[str]
    env: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)  # port name -> local port
    liveness: dict[str, Any] | None = None
    readiness: dict[str, Any] | None = None

    def probe_url(self, probe: dict[str, Any]) -> str:
        get = probe["httpGet"]
        port = get["port"]
        local = self.ports[port] if isinstance(port, str) else port
        return f"http://127.0.0.1:{local}{get.get('path', '/')}"


def pod_specs(objects: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, name, pod template)`` of every Deployment, Job and CronJob."""
    out = []
    for obj in objects:
        kind = obj["kind"]
        if kind in ("Deployment", "Job"):
            out.append((kind, obj["metadata"]["name"], obj["spec"]["template"]))
        elif kind == "CronJob":
            out.append((kind, obj["metadata"]["name"], obj["spec"]["jobTemplate"]["spec"]["template"]))
    return out


def _secret_files(obj: dict[str, Any]) -> dict[str, bytes]:
    files = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    files |= {k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()}
    return files


def _volume_dir(volume: dict[str, Any], pod_dir: Path, shared: Path,
                objects: Mapping[tuple[str, str], dict[str, Any]]) -> Path:
    name = volume["name"]
    if "persistentVolumeClaim" in volume:
        path = shared / "pvc" / volume["persistentVolumeClaim"]["claimName"]
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = pod_dir / "volumes" / name
    path.mkdir(parents=True, exist_ok=True)
    if "secret" in volume:
        obj = objects[("Secret", volume["secret"]["secretName"])]
        mode = int(volume["secret"].get("defaultMode", 0o644))
        for key, data in _secret_files(obj).items():
            (path / key).write_bytes(data)
            (path / key).chmod(mode | 0o400)
    elif "configMap" in volume:
        obj = objects[("ConfigMap", volume["configMap"]["name"])]
        for key, text in (obj.get("data") or {}).items():
            (path / key).write_text(text)
    elif "emptyDir" not in volume:
        raise AssertionError(f"volume {name}: only secret, configMap, emptyDir and persistentVolumeClaim are run")
    return path


def materialize(kind: str, name: str, template: dict[str, Any], container: dict[str, Any], root: Path,
                objects: Mapping[tuple[str, str], dict[str, Any]], entrypoint: list[str],
                free_port: Callable[[], int]) -> Launch:
    """The local process of one container (see the module's docstring)."""
    spec = template["spec"]
    pod_dir = root / f"{kind.lower()}-{name}" / container["name"]
    dirs = {v["name"]: _volume_dir(v, pod_dir, root, objects) for v in spec.get("volumes", [])}
    mounts = sorted(((m["mountPath"], dirs[m["name"]]) for m in container.get("volumeMounts", [])),
                    key=lambda m: -len(m[0]))

    def local(value: str) -> str:
        for mount, path in mounts:
            if value == mount or value.startswith(mount + "/"):
                return str(path) + value[len(mount):]
        return value

    ports = {str(p.get("name") or p["containerPort"]): free_port() for p in container.get("ports", [])}
    by_number = {str(p["containerPort"]): ports[str(p.get("name") or p["containerPort"])]
                 for p in container.get("ports", [])}
    args = [local(a) for a in container.get("args", [])]
    for i in range(1, len(args)):
        if args[i - 1].startswith("--") and args[i - 1].endswith("port") and args[i] in by_number:
            args[i] = str(by_number[args[i]])
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env |= {k: v.decode() for k, v in _secret_files(objects[("Secret", source["secretRef"]["name"])]).items()}
    for item in container.get("env", []):
        if "value" not in item:
            raise AssertionError(f"{name}: env {item['name']} without a value is not run here")
        env[item["name"]] = local(str(item["value"]))
    command = [local(c) for c in container["command"]] if container.get("command") else list(entrypoint)
    component = template.get("metadata", {}).get("labels", {}).get("app.kubernetes.io/component", name)
    return Launch(name=f"{name}/{container['name']}", component=component, argv=[*command, *args], env=env,
                  ports=ports, liveness=container.get("livenessProbe"), readiness=container.get("readinessProbe"))
