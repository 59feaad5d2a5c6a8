"""plugpool: a cluster-autoscaler externalgrpc cloud provider for bare-metal machines on ESPHome smart plugs.

See docs/plugpool.md. ``run(config)`` wires the production adapters; tests wire the doubles.
"""

from __future__ import annotations

from .config import ConfigError, PlugPoolConfig, credentials_from_env, load_config, parse_config
from .kube import Cluster, KubernetesCluster
from .plugs import EspHomePlugs, PlugClient, PlugError
from .pool import InstanceState, PlugPool, ProviderError
from .service import CloudProviderService, start_server

__all__ = [
    "CloudProviderService",
    "Cluster",
    "ConfigError",
    "EspHomePlugs",
    "InstanceState",
    "KubernetesCluster",
    "PlugClient",
    "PlugError",
    "PlugPool",
    "PlugPoolConfig",
    "ProviderError",
    "credentials_from_env",
    "load_config",
    "parse_config",
    "start_server",
]
