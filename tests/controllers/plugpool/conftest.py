"""Fixtures for the plugpool tests: the Kubernetes API and ESPHome doubles, and rigs wired to them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sco.demo.kubeapi import KubeApiDouble
from testkit.esphome import EspHomeDouble
from tests.controllers.plugpool.helpers import NS, Rig, config_dict, make_rig


@pytest.fixture(autouse=True)
def _namespace(request: pytest.FixtureRequest) -> None:
    """The plugpool's namespace in the Kubernetes API double, for every test that uses it."""
    if "kube" in request.fixturenames:
        kube: KubeApiDouble = request.getfixturevalue("kube")
        kube.put_object("Namespace", {"metadata": {"name": NS}})


@pytest.fixture
def plugs() -> Iterator[EspHomeDouble]:
    with EspHomeDouble() as double:
        yield double


@pytest.fixture
def rig_factory(kube: KubeApiDouble, plugs: EspHomeDouble) -> Iterator[Callable[..., Rig]]:
    made: list[Rig] = []

    def factory(nodes: int = 2, max_size: int | None = None, on: tuple[str, ...] = (), **power_off: Any) -> Rig:
        urls = {}
        for i in range(1, nodes + 1):
            name = f"worker-{i}"
            urls[name] = f"{plugs.url}/{name}" if plugs.has_plug(name) else plugs.add_plug(name, on=name in on)
        rig = make_rig(kube, plugs, config_dict(urls, max_size, **power_off))
        made.append(rig)
        return rig

    yield factory
    for rig in made:
        rig.stop()


@pytest.fixture
def rig(rig_factory: Callable[..., Rig]) -> Rig:
    return rig_factory()
