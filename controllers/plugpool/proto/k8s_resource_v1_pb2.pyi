# mypy: ignore-errors
from controllers.plugpool.proto import k8s_meta_v1_pb2 as _k8s_meta_v1_pb2
from controllers.plugpool.proto import k8s_quantity_pb2 as _k8s_quantity_pb2
from controllers.plugpool.proto import k8s_core_v1_pb2 as _k8s_core_v1_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourcePool(_message.Message):
    __slots__ = ("name", "generation", "resourceSliceCount")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCESLICECOUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    generation: int
    resourceSliceCount: int
    def __init__(self, name: _Optional[str] = ..., generation: _Optional[int] = ..., resourceSliceCount: _Optional[int] = ...) -> None: ...

class DeviceAttribute(_message.Message):
    __slots__ = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
    INT_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    STRING_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INTS_FIELD_NUMBER: _ClassVar[int]
    BOOLS_FIELD_NUMBER: _ClassVar[int]
    STRINGS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    int: int
    bool: bool
    string: str
    version: str
    ints: _containers.RepeatedScalarFieldContainer[int]
    bools: _containers.RepeatedScalarFieldContainer[bool]
    strings: _containers.RepeatedScalarFieldContainer[str]
    versions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, int: _Optional[int] = ..., bool: _Optional[bool] = ..., string: _Optional[str] = ..., version: _Optional[str] = ..., ints: _Optional[_Iterable[int]] = ..., bools: _Optional[_Iterable[bool]] = ..., strings: _Optional[_Iterable[str]] = ..., versions: _Optional[_Iterable[str]] = ...) -> None: ...

class CapacityRequestPolicyRange(_message.Message):
    __slots__ = ("min", "max", "step")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    min: _k8s_quantity_pb2.Quantity
    max: _k8s_quantity_pb2.Quantity
    step: _k8s_quantity_pb2.Quantity
    def __init__(self, min: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ..., max: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ..., step: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class CapacityRequestPolicy(_message.Message):
    __slots__ = ("default", "validValues", "validRange")
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    VALIDVALUES_FIELD_NUMBER: _ClassVar[int]
    VALIDRANGE_FIELD_NUMBER: _ClassVar[int]
    default: _k8s_quantity_pb2.Quantity
    validValues: _containers.RepeatedCompositeFieldContainer[_k8s_quantity_pb2.Quantity]
    validRange: CapacityRequestPolicyRange
    def __init__(self, default: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ..., validValues: _Optional[_Iterable[_Union[_k8s_quantity_pb2.Quantity, _Mapping]]] = ..., validRange: _Optional[_Union[CapacityRequestPolicyRange, _Mapping]] = ...) -> None: ...

class DeviceCapacity(_message.Message):
    __slots__ = ("value", "requestPolicy")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REQUESTPOLICY_FIELD_NUMBER: _ClassVar[int]
    value: _k8s_quantity_pb2.Quantity
    requestPolicy: CapacityRequestPolicy
    def __init__(self, value: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ..., requestPolicy: _Optional[_Union[CapacityRequestPolicy, _Mapping]] = ...) -> None: ...

class Counter(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: _k8s_quantity_pb2.Quantity
    def __init__(self, value: _Optional[_Union[_k8s_quantity_pb2.Quantity, _Mapping]] = ...) -> None: ...

class CounterSet(_message.Message):
    __slots__ = ("name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, name: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class DeviceCounterConsumption(_message.Message):
    __slots__ = ("counterSet", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    COUNTERSET_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    counterSet: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, counterSet: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class DeviceTaint(_message.Message):
    __slots__ = ("key", "value", "effect", "timeAdded")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TIMEADDED_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    timeAdded: _k8s_meta_v1_pb2.Time
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., timeAdded: _Optional[_Union[_k8s_meta_v1_pb2.Time, _Mapping]] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints", "bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceAttribute
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceAttribute, _Mapping]] = ...) -> None: ...
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceCapacity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceCapacity, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CONSUMESCOUNTERS_FIELD_NUMBER: _ClassVar[int]
    NODENAME_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLNODES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    BINDSTONODE_FIELD_NUMBER: _ClassVar[int]
    BINDINGCONDITIONS_FIELD_NUMBER: _ClassVar[int]
    BINDINGFAILURECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOWMULTIPLEALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    attributes: _containers.MessageMap[str, DeviceAttribute]
    capacity: _containers.MessageMap[str, DeviceCapacity]
    consumesCounters: _containers.RepeatedCompositeFieldContainer[DeviceCounterConsumption]
    nodeName: str
    nodeSelector: _k8s_core_v1_pb2.NodeSelector
    allNodes: bool
    taints: _containers.RepeatedCompositeFieldContainer[DeviceTaint]
    bindsToNode: bool
    bindingConditions: _containers.RepeatedScalarFieldContainer[str]
    bindingFailureConditions: _containers.RepeatedScalarFieldContainer[str]
    allowMultipleAllocations: bool
    def __init__(self, name: _Optional[str] = ..., attributes: _Optional[_Mapping[str, DeviceAttribute]] = ..., capacity: _Optional[_Mapping[str, DeviceCapacity]] = ..., consumesCounters: _Optional[_Iterable[_Union[DeviceCounterConsumption, _Mapping]]] = ..., nodeName: _Optional[str] = ..., nodeSelector: _Optional[_Union[_k8s_core_v1_pb2.NodeSelector, _Mapping]] = ..., allNodes: _Optional[bool] = ..., taints: _Optional[_Iterable[_Union[DeviceTaint, _Mapping]]] = ..., bindsToNode: _Optional[bool] = ..., bindingConditions: _Optional[_Iterable[str]] = ..., bindingFailureConditions: _Optional[_Iterable[str]] = ..., allowMultipleAllocations: _Optional[bool] = ...) -> None: ...

class ResourceSliceSpec(_message.Message):
    __slots__ = ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices", "perDeviceNodeSelection", "sharedCounters")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NODENAME_FIELD_NUMBER: _ClassVar[int]
    NODESELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLNODES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    PERDEVICENODESELECTION_FIELD_NUMBER: _ClassVar[int]
    SHAREDCOUNTERS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: ResourcePool
    nodeName: str
    nodeSelector: _k8s_core_v1_pb2.NodeSelector
    allNodes: bool
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    perDeviceNodeSelection: bool
    sharedCounters: _containers.RepeatedCompositeFieldContainer[CounterSet]
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[_Union[ResourcePool, _Mapping]] = ..., nodeName: _Optional[str] = ..., nodeSelector: _Optional[_Union[_k8s_core_v1_pb2.NodeSelector, _Mapping]] = ..., allNodes: _Optional[bool] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., perDeviceNodeSelection: _Optional[bool] = ..., sharedCounters: _Optional[_Iterable[_Union[CounterSet, _Mapping]]] = ...) -> None: ...

class ResourceSlice(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: _k8s_meta_v1_pb2.ObjectMeta
    spec: ResourceSliceSpec
    def __init__(self, metadata: _Optional[_Union[_k8s_meta_v1_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceSliceSpec, _Mapping]] = ...) -> None: ...
