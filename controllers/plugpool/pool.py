"""The plug pool: what cluster-autoscaler's RPCs do, on state rebuilt from the plugs and the Node objects.

An instance of a group is a configured machine that has a registered Node (running), a plug that is on
(creating: powered, not registered yet) or a scale-down in progress (deleting). Its id is the providerID the
Node will carry, ``<providerIDPrefix><name>``.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from .config import NodeConfig, NodeGroupConfig, PlugPoolConfig
from .k8s_proto import node_bytes, resource_slice_bytes
from .kube import Cluster, KubeError
from .nodes import has_delete_taint, is_ready, match_nodes, poweroff_pod, poweroff_pod_name, template_node
from .plugs import PlugBoard, PlugClient, PlugError
from .scaledown import Action, Flow, Observed, Phase, plan, start
from .slices import SliceStore

__all__ = ["InstanceState", "PlugPool", "ProviderError"]

log = logging.getLogger("plugpool")
Obj = dict[str, Any]


class InstanceState(enum.Enum):
    RUNNING = 1
    CREATING = 2
    DELETING = 3


@dataclass(frozen=True)
class Instance:
    id: str
    machine: str
    state: InstanceState


class PlugPool:
    def __init__(
        self,
        config: PlugPoolConfig,
        plugs: PlugClient,
        cluster: Cluster,
        clock: Callable[[], float] = time.monotonic,
        tick: float = 1.0,
    ) -> None:
        self.config = config
        self._cluster = cluster
        self._clock = clock
        self._tick = tick
        self._machines: dict[str, tuple[NodeGroupConfig, NodeConfig]] = {n.name: (g, n) for g, n in config.all_nodes}
        self._groups = {g.id: g for g in config.node_groups}
        self.board = PlugBoard(plugs, [(n.name, n.plug) for _, n in config.all_nodes])
        self.slices = SliceStore(cluster, config.power_off.namespace)
        self._lock = threading.RLock()
        self._nodes: dict[str, Obj] = {}  # machine -> registered Node, as of the last refresh or check
        self._flows: dict[str, Flow] = {}
        self._powered_at: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the scale-down thread."""
        self._thread = threading.Thread(target=self._run, name="plugpool-scale-down", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the scale-down thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.board.close()

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            try:
                self.advance()
            except Exception:  # keep the loop alive whatever happens
                log.exception("scale-down step failed; retrying on the next tick")

    # ------------------------------------------------------------------ observation
    def refresh(self) -> None:
        """Rebuild state from the plugs (in parallel) and the Node objects. Never raises: a failed Refresh stops
        cluster-autoscaler entirely, so an unreadable plug keeps its last known state and an unreachable API
        keeps the last Node list."""
        self.board.refresh()
        try:
            nodes = match_nodes(self.config, self._cluster.list_nodes())
        except KubeError as exc:
            log.warning("cannot list Nodes, keeping the last known ones: %s", exc)
            return
        with self._lock:
            self._nodes = nodes
        try:
            self.slices.load()
            up = {m: n["metadata"]["name"] for m, n in nodes.items() if is_ready(n)}
            if up:
                by_node: dict[str, list[Obj]] = {name: [] for name in up.values()}
                for s in self._cluster.list_resource_slices():
                    owner = (s.get("spec") or {}).get("nodeName")
                    if owner in by_node:
                        by_node[owner].append(s)
                self.slices.record({m: by_node[name] for m, name in up.items()})
        except KubeError as exc:
            log.warning("cannot read DRA ResourceSlices or their snapshot: %s", exc)

    def _fresh_node(self, machine: str) -> Obj | None:
        """The machine's Node read now; raises KubeError so that callers fail closed."""
        node = match_nodes(self.config, self._cluster.list_nodes()).get(machine)
        with self._lock:
            if node is None:
                self._nodes.pop(machine, None)
            else:
                self._nodes[machine] = node
        return node

    def _group(self, group_id: str) -> NodeGroupConfig:
        group = self._groups.get(group_id)
        if group is None:
            raise ProviderError(f"unknown node group {group_id!r}; configured: {sorted(self._groups)}", "NOT_FOUND")
        return group

    def instances(self, group_id: str) -> list[Instance]:
        """The group's machines with their states."""
        group = self._group(group_id)
        out = []
        with self._lock:
            for node in group.nodes:
                if node.name in self._flows:
                    state: InstanceState | None = InstanceState.DELETING
                elif node.name in self._nodes:
                    state = InstanceState.RUNNING
                elif self.board.get(node.name).on:
                    state = InstanceState.CREATING
                else:
                    state = None
                if state is not None:
                    out.append(Instance(self.config.provider_id(node.name), node.name, state))
        return out

    def target_size(self, group_id: str) -> int:
        """The group's machines not being deleted."""
        return sum(1 for i in self.instances(group_id) if i.state is not InstanceState.DELETING)

    def group_for_node(self, provider_id: str, name: str) -> str:
        """The id of the group a node belongs to, or ``""``."""
        machine = self._machine_for(provider_id, name)
        return self._machines[machine][0].id if machine else ""

    def _machine_for(self, provider_id: str, name: str) -> str | None:
        prefix = self.config.provider_id_prefix
        if provider_id:
            if provider_id.startswith(prefix) and provider_id[len(prefix) :] in self._machines:
                return provider_id[len(prefix) :]
            if name in self._machines:
                log.error(
                    "configuration error: node %s has providerID %r, expected %r",
                    name,
                    provider_id,
                    self.config.provider_id(name),
                )
            return None
        return name if name in self._machines else None

    # ------------------------------------------------------------------ scale-up
    def increase_size(self, group_id: str, delta: int) -> None:
        """Power on ``delta`` more machines of the group; raises ``ProviderError`` past its maximum."""
        group = self._group(group_id)
        if delta <= 0:
            raise ProviderError(f"size increase must be positive, got {delta}", "INVALID_ARGUMENT")
        with self._lock:
            size = self.target_size(group_id)
            if size + delta > group.max_size:
                raise ProviderError(
                    f"size increase too large: target {size} + {delta} is above maxSize {group.max_size} of {group_id}",
                    "INVALID_ARGUMENT",
                )
            powered, failures = 0, []
            for node in group.nodes:
                if powered == delta:
                    break
                if not self._can_power_on(node.name):
                    continue
                try:
                    self.board.switch(node.name, True)
                except PlugError as exc:  # skipped: the next machine gets the chance
                    failures.append(f"{node.name}: {exc}")
                    log.warning("scale-up: plug of %s failed, trying the next machine: %s", node.name, exc)
                    continue
                self._powered_at[node.name] = self._clock()
                log.info("scale-up: switched on %s (group %s)", node.name, group_id)
                powered += 1
        if powered < delta:
            raise ProviderError(
                f"powered on {powered} of {delta} machine(s) in {group_id}; no other machine is known to be off"
                + (f" (failed: {'; '.join(failures)})" if failures else ""),
                "UNAVAILABLE",
            )

    def _can_power_on(self, machine: str) -> bool:
        if machine in self._flows or machine in self._nodes or self.board.get(machine).on is not False:
            return False  # in a scale-down, registered, on, or never read yet
        try:
            leftover = self._cluster.get_pod(self.config.power_off.namespace, poweroff_pod_name(machine))
        except KubeError:
            return False
        return leftover is None  # its Node is deleted only after the poweroff pod is gone

    # ------------------------------------------------------------------ scale-down
    def delete_nodes(self, group_id: str, nodes: list[tuple[str, str]]) -> None:
        """Start the scale-down of the named nodes; raises ``ProviderError`` for those refused."""
        group = self._group(group_id)
        refused = []
        for provider_id, name in nodes:
            machine = self._machine_for(provider_id, name)
            if machine is None or self._machines[machine][0].id != group.id:
                refused.append(f"node {name or provider_id} does not belong to node group {group_id}")
                continue
            with self._lock:
                if machine in self._flows:
                    continue
                try:
                    node = self._fresh_node(machine)
                except KubeError as exc:
                    refused.append(f"{machine}: cannot read its Node ({exc})")
                    continue
                if node is not None and not has_delete_taint(node):
                    refused.append(
                        f"node {machine} does not carry the ToBeDeletedByClusterAutoscaler taint; "
                        "plugpool never shuts down a node cluster-autoscaler has not marked"
                    )
                    continue
                if node is None and self.board.get(machine).on is False and machine not in self._powered_at:
                    continue  # off and not registered: nothing to delete
                self._flows[machine] = start(machine, node, self._clock())
                log.info("scale-down of %s started (%s)", machine, "registered" if node else "not registered")
        if refused:
            raise ProviderError("; ".join(refused))

    def decrease_target_size(self, group_id: str, delta: int) -> None:
        """Forget ``-delta`` requested machines not yet up; raises ``ProviderError`` otherwise."""
        group = self._group(group_id)
        if delta >= 0:
            raise ProviderError(f"size decrease must be negative, got {delta}", "INVALID_ARGUMENT")
        with self._lock:
            creating = [i for i in self.instances(group.id) if i.state is InstanceState.CREATING]
            if -delta > len(creating):
                raise ProviderError(
                    f"attempt to delete existing nodes: {group_id} has {len(creating)} instance(s) not yet "
                    f"registered, cannot decrease by {-delta}"
                )
            creating.sort(key=lambda i: self._powered_at.get(i.machine, 0.0), reverse=True)
            for inst in creating[:-delta]:
                self._switch_off_checked(inst.machine)

    def _switch_off_checked(self, machine: str) -> None:
        """The safety rule before every plug-off: a registered Node without the taint keeps its power."""
        try:
            node = self._fresh_node(machine)
        except KubeError as exc:
            raise ProviderError(
                f"{machine}: cannot check its Node before switching off ({exc})", "UNAVAILABLE"
            ) from None
        if node is not None and not has_delete_taint(node):
            raise ProviderError(f"{machine} registered meanwhile and keeps its power")
        try:
            self.board.switch(machine, False)
        except PlugError as exc:
            raise ProviderError(f"{machine}: plug off failed ({exc})", "UNAVAILABLE") from None
        self._powered_at.pop(machine, None)
        log.info("switched off %s", machine)

    def advance(self) -> None:
        """One step of every scale-down in progress."""
        with self._lock:
            flows = list(self._flows.values())
        for flow in flows:
            self._advance(flow)

    def _advance(self, flow: Flow) -> None:
        power_off = self.config.power_off
        pod = poweroff_pod_name(flow.machine)
        while True:
            try:
                node = self._fresh_node(flow.machine)
                pod_exists = self._cluster.get_pod(power_off.namespace, pod) is not None
            except KubeError as exc:
                log.warning("scale-down of %s waits: cannot read the cluster (%s)", flow.machine, exc)
                return
            now = self._clock()
            action, after = plan(flow, Observed(node, pod_exists), power_off.not_ready_timeout, power_off.grace, now)
            try:
                if action is Action.CREATE_POD:
                    assert node is not None
                    self._cluster.create_pod(power_off.namespace, poweroff_pod(node["metadata"]["name"], power_off))
                    log.info("scale-down of %s: poweroff pod %s/%s created", flow.machine, power_off.namespace, pod)
                elif action is Action.SWITCH_OFF:
                    with self._lock:
                        self._switch_off_checked(flow.machine)
                elif action is Action.DELETE_POD:
                    self._cluster.delete_pod(power_off.namespace, pod)
                elif action is Action.DELETE_NODE:
                    assert node is not None
                    self._cluster.delete_node(node["metadata"]["name"])
                    with self._lock:
                        self._nodes.pop(flow.machine, None)
            except (KubeError, ProviderError) as exc:
                log.warning("scale-down of %s: %s failed, retrying: %s", flow.machine, action.value, exc)
                return
            if after.phase in (Phase.DONE, Phase.ABORTED):
                with self._lock:
                    self._flows.pop(flow.machine, None)
                log.info(
                    "scale-down of %s %s%s",
                    flow.machine,
                    after.phase.value,
                    f": {after.reason}" if after.reason else "",
                )
                return
            with self._lock:
                if flow.machine not in self._flows:
                    return
                self._flows[flow.machine] = after
            if action in (Action.WAIT, Action.DELETE_POD) or after == flow:
                return
            flow = after

    def flow(self, machine: str) -> Flow | None:
        """The machine's scale-down flow in progress, or None."""
        with self._lock:
            return self._flows.get(machine)

    # ------------------------------------------------------------------ template
    def template(self, group_id: str) -> tuple[Obj, bytes, list[bytes]]:
        """The group's template node, as an object and as protobuf bytes, with its ResourceSlices."""
        group = self._group(group_id)
        node = template_node(self.config, group)
        slices = self.slices.template(group, node["metadata"]["name"])
        return node, node_bytes(node), [resource_slice_bytes(s) for s in slices]
