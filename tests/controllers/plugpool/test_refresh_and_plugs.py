"""Refresh never fails; plugs are read in parallel with a short timeout; the ESPHome REST client itself."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from controllers.plugpool.config import Credentials, PlugConfig
from controllers.plugpool.plugs import EspHomePlugs, PlugError
from controllers.plugpool.proto import externalgrpc_pb2 as pb
from testkit.esphome import EspHomeDouble
from tests.controllers.plugpool.helpers import Rig

CREATING, RUNNING = pb.InstanceStatus.instanceCreating, pb.InstanceStatus.instanceRunning


def test_the_esphome_client_reads_and_switches_a_relay_with_basic_auth(plugs: EspHomeDouble) -> None:
    plug = PlugConfig(url=plugs.add_plug("p1"), switch="relay")
    client = EspHomePlugs(Credentials(username="admin", password="secret"), timeout=0.5)
    assert client.read(plug) is False
    client.switch(plug, True)
    assert client.read(plug) is True and plugs.is_on("p1")
    client.switch(plug, False)
    assert plugs.switches("p1") == ["turn_on", "turn_off"]
    with pytest.raises(PlugError, match="401"):
        EspHomePlugs(Credentials(username="admin", password="wrong")).read(plug)
    with pytest.raises(PlugError, match="401"):
        EspHomePlugs(None).read(plug)
    with pytest.raises(PlugError, match="404"):
        client.read(PlugConfig(url=plug.url, switch="other"))


def test_a_slow_plug_times_out_quickly(plugs: EspHomeDouble) -> None:
    plug = PlugConfig(url=plugs.add_plug("p1"), switch="relay")
    plugs.slow("p1", 10.0)
    started = time.monotonic()
    with pytest.raises(PlugError, match="Timeout"):
        EspHomePlugs(Credentials(username="admin", password="secret"), timeout=0.3).read(plug)
    assert time.monotonic() - started < 5.0  # 0.3 s timeout, far from the 10 s answer even on a loaded machine


@pytest.mark.slow  # seconds of real plug timeouts
def test_plugs_are_read_in_parallel_and_an_unreadable_plug_keeps_its_last_known_state(
    rig_factory: Callable[..., Rig],
) -> None:
    rig = rig_factory(nodes=6, on=("worker-1",))
    rig.refresh()
    assert rig.instances() == {"worker-1": CREATING}
    names = [f"worker-{i}" for i in range(1, 7)]
    for name in names:
        rig.plugs.slow(name, 0.25)
    rig.refresh()
    assert rig.plugs.max_in_flight >= 2  # the six 0.25 s reads overlap (one after the other, never more than 1)
    for name in names[1:]:
        rig.plugs.heal(name)
    rig.plugs.slow("worker-1", 20.0)  # far beyond the rig's 2 s plug timeout
    rig.plugs.set_on("worker-1", False)  # unseen: the read times out
    started = time.monotonic()
    rig.refresh()  # does not fail
    assert time.monotonic() - started < 10.0  # gave up on the plug, did not wait for its 20 s answer
    assert rig.instances() == {"worker-1": CREATING}  # last known state kept
    rig.plugs.fail("worker-1", 0)  # connection dropped
    rig.refresh()
    assert rig.instances() == {"worker-1": CREATING}
    rig.plugs.heal("worker-1")
    rig.refresh()
    assert rig.instances() == {}


def test_refresh_succeeds_when_the_kubernetes_api_fails_and_keeps_the_last_nodes(rig: Rig) -> None:
    rig.plugs.set_on("worker-1", True)
    rig.register("worker-1")
    rig.refresh()
    rig.kube.fail_next("GET", r"/api/v1/nodes$", 503, times=3)
    rig.refresh()
    assert rig.instances() == {"worker-1": RUNNING}


def test_state_comes_from_the_plugs_and_the_nodes_on_every_refresh(rig: Rig) -> None:
    rig.refresh()
    assert rig.instances() == {}
    rig.plugs.set_on("worker-2", True)  # someone switched it on by hand: a booting machine
    rig.refresh()
    assert rig.instances() == {"worker-2": CREATING} and rig.target() == 1
    rig.register("worker-2")
    rig.refresh()
    assert rig.instances() == {"worker-2": RUNNING}
    rig.kube.delete_object("Node", "worker-2")
    rig.plugs.set_on("worker-2", False)
    rig.refresh()
    assert rig.instances() == {} and rig.target() == 0
    assert [e for e in rig.plugs.log if e[0] == "POST"] == []  # refreshes only read: nothing was asked
