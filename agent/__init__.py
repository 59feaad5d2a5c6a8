"""The SCO node agent: acts on a reclaim notice within 2 s from what the node already holds (ADR-09,
ADR-13..17, ADR-31). Imports only the light ``contracts`` modules (stdlib + cryptography) and nats-py."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
