"""Admission (ADR-04): the data the Kubernetes policies and the Slurm job_submit.lua read, generated from a
verified bundle, and the CEL policy files in ``deploy/admission/``."""

from __future__ import annotations

from .policy import POLICY_FILES, load_policy_expressions
from .sync import (
    CONFIGMAP_NAME,
    CONFIGMAP_NAMESPACE,
    AdmissionEntry,
    admission_entries,
    render_configmap,
    render_lua_data,
    write_atomically,
)

__all__ = [
    "CONFIGMAP_NAME",
    "CONFIGMAP_NAMESPACE",
    "POLICY_FILES",
    "AdmissionEntry",
    "admission_entries",
    "load_policy_expressions",
    "render_configmap",
    "render_lua_data",
    "write_atomically",
]
