"""The errors the node agent defines. Standard library only, like the rest of the agent.

    Exception
    ├── AgentError           an input the agent cannot use; the message names the value and the fix
    │   ├── SlurmError       a Slurm client command failed (defined in ``agent.slurm``)
    │   └── KubeError        a Kubernetes API call failed, with its HTTP status (``agent.kube``)
    └── SchedulerSlow        the scheduler did not answer in time: drain locally (``agent.drain``)
    OSError
    └── HttpError            a server could not be reached or did not speak HTTP (``agent.httpwire``)

``HttpError`` stays an ``OSError`` so that callers treating it as a network failure keep doing so.
``SlurmError``, ``KubeError`` and ``SchedulerSlow`` still live next to the adapters and the drain engine
that raise them (being rewritten); they move here with that rewrite. ``agent.model`` and ``agent.httpwire``
re-export the two defined here.
"""

from __future__ import annotations

__all__ = ["AgentError", "HttpError"]


class AgentError(Exception):
    """An input the agent cannot use; the message names the value and the fix."""


class HttpError(OSError):
    """The server could not be reached or did not speak HTTP."""
