"""A plan's pool table hands out one shape per shape value, whichever contract objects ask (issue 18).

The table looks a shape up by the identity of the contract's parts (resources, eligibility) and its partition
before it keys on their values: the workloads of one template share those objects. These tests check the
shortcut never gives a contract a shape of another value, and that equal values from other objects still meet.
"""

from __future__ import annotations

from decimal import Decimal

from contracts.schema import Eligibility, Resources
from controllers.planning import PoolState
from controllers.planning.tables import PoolTable, Static

from ..builders import contract, pool


def table() -> PoolTable:
    pools = [PoolState(pool(f"p{i}", hall=f"h{i % 3 + 1}", vcpu=4 * (1 + i % 2)), 10) for i in range(6)]
    pools += [PoolState(pool(f"g{i}", model="guaranteed", hall=f"h{i + 1}"), 10) for i in range(3)]
    static = Static(pools, Decimal("0.85"))
    return PoolTable(static, list(static.available))


def test_workloads_of_one_template_and_equal_contracts_of_other_objects_get_the_same_shape() -> None:
    t = table()
    a = contract("T2", name="wk-a")
    twin = a.model_copy(update={"workload": "wk-b"})  # the same resources and eligibility objects
    equal = a.model_copy(update={"resources": Resources(vcpu=4, memory_gib=16),
                                 "eligible": Eligibility(**a.eligible.model_dump())})
    assert a.resources is not equal.resources and a.resources == equal.resources
    assert t.reclaimable(a) is t.reclaimable(twin) is t.reclaimable(equal)
    assert t.guaranteed(a) is t.guaranteed(twin) is t.guaranteed(equal)


def test_a_contract_sharing_the_parts_of_another_but_not_its_values_gets_its_own_shape() -> None:
    t = table()
    a = contract("T2", name="wk-a")
    first = t.reclaimable(a), t.guaranteed(a)
    other_region = a.model_copy(update={"partition": "r2/k8s"})  # same parts objects, another region
    assert t.reclaimable(other_region) is not first[0] and t.guaranteed(other_region) is not first[1]
    assert not t.reclaimable(other_region).entries
    other_unit = a.model_copy(update={"business_unit": "someone-else"})
    assert t.guaranteed(other_unit) is not first[1] and t.reclaimable(other_unit) is first[0]
    wider = a.model_copy(update={"resources": Resources(vcpu=8, memory_gib=32)})
    assert t.reclaimable(wider) is not first[0]
    assert {i for i, _ in t.reclaimable(wider).entries} < {i for i, _ in first[0].entries}
    one_hall = a.model_copy(update={"eligible": Eligibility(halls=("h1",))})  # same resources object
    assert {t.hall[i] for i, _ in t.reclaimable(one_hall).entries} == {"h1"}
