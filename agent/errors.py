"""The errors the node agent defines. Standard library only, like the rest of the agent.

    Exception
    ├── AgentError           an input the agent cannot use; the message names the value and the fix
    │   ├── SlurmError       a Slurm client command failed (raised by ``agent.drain.slurm``)
    │   └── KubeError        a Kubernetes API call failed, with its HTTP status (``agent.drain.kube``)
    OSError
    └── HttpError            a server could not be reached or did not speak HTTP (``agent.httpwire``)

``HttpError`` stays an ``OSError`` so that callers treating it as a network failure keep doing so.
``agent.model``, ``agent.httpwire``, ``agent.drain.slurm`` and ``agent.drain.kube`` re-export what they raise. The drain
engine's ``SchedulerSlow`` and ``Deferred`` are not errors but control flow inside one drain (the scheduler
did not answer in time / an advisory drain waits for the hard notice); they stay in ``agent.drain.report``, beside
the drain's report and the decision table's outcome (``agent.drain.plan.Outcome``) they carry.
"""

from __future__ import annotations

__all__ = ["AgentError", "HttpError", "KubeError", "SlurmError"]


class AgentError(Exception):
    """An input the agent cannot use; the message names the value and the fix."""


class HttpError(OSError):
    """The server could not be reached or did not speak HTTP."""


class SlurmError(AgentError):
    """A Slurm client call failed."""


class KubeError(AgentError):
    """A Kubernetes API call failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        """Keep the message and the HTTP status."""
        super().__init__(message)
        self.status = status
