"""Kubernetes JSON objects to their protobuf wire form (what Go's ``v1.Node#Marshal`` produces), through the
vendored minimal messages in ``proto/``. Time and Quantity are the two types whose JSON and proto forms
differ; fields the vendored messages do not know are dropped (and logged once)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from .proto import k8s_core_v1_pb2, k8s_resource_v1_pb2

__all__ = ["node_bytes", "node_message", "resource_slice_bytes"]

log = logging.getLogger("plugpool.proto")
_dropped: set[str] = set()


def _fill(msg: Message, data: dict[str, Any], where: str) -> None:
    fields = msg.DESCRIPTOR.fields_by_name
    for key, value in data.items():
        fd = fields.get(key)
        if fd is None or value is None:
            if fd is None and f"{where}.{key}" not in _dropped:
                _dropped.add(f"{where}.{key}")
                log.info("field %s.%s is not in the vendored protos and is left out", where, key)
            continue
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            value_fd = fd.message_type.fields_by_name["value"]
            target = getattr(msg, key)
            for k, v in value.items():
                if value_fd.message_type is not None:
                    _set_message(target[k], v, f"{where}.{key}")
                else:
                    target[k] = v
        elif fd.label == FieldDescriptor.LABEL_REPEATED:
            target = getattr(msg, key)
            for item in value:
                if fd.message_type is not None:
                    _set_message(target.add(), item, f"{where}.{key}")
                else:
                    target.append(item)
        elif fd.message_type is not None:
            _set_message(getattr(msg, key), value, f"{where}.{key}")
        else:
            setattr(msg, key, value)


def _set_message(msg: Message, value: Any, where: str) -> None:
    name = msg.DESCRIPTOR.full_name
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        msg.string = str(value)
    elif name == "k8s.io.apimachinery.pkg.apis.meta.v1.Time":
        stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        msg.seconds = int(stamp.timestamp())
    else:
        _fill(msg, value, where)


def node_message(node: dict[str, Any]) -> k8s_core_v1_pb2.Node:
    """A Node object as the Kubernetes protobuf message."""
    msg = k8s_core_v1_pb2.Node()
    _fill(msg, {k: v for k, v in node.items() if k not in ("apiVersion", "kind")}, "Node")
    return msg


def node_bytes(node: dict[str, Any]) -> bytes:
    """A Node object as deterministic protobuf bytes."""
    return bytes(node_message(node).SerializeToString(deterministic=True))


def resource_slice_bytes(resource_slice: dict[str, Any]) -> bytes:
    """A ResourceSlice object as deterministic protobuf bytes."""
    msg = k8s_resource_v1_pb2.ResourceSlice()
    body = {k: v for k, v in resource_slice.items() if k not in ("apiVersion", "kind")}
    _fill(msg, body, "ResourceSlice")
    return bytes(msg.SerializeToString(deterministic=True))
