"""The errors the ``controllers`` package defines. Standard library and ``contracts.errors`` only.

    Exception
    └── ControllersError            the base of every error ``controllers`` raises on purpose
        ├── CapExceeded             a reservation past a workload's 24 h spend cap (controller ledger)
        ├── DrillError              a drill that cannot run (also a ValueError)
        ├── UserDataError           a launch's user-data cannot be built: code, field, value, fix (also a ValueError)
        ├── CredentialLapsed        the controller's own provider credential expired and renewing it failed
        │                           (also the provider contract's ``contracts.errors.ProviderError``)
        ├── SlurmRestError          slurmrestd refused the token, did not answer or answered nonsense: code, fix
        └── plugpool (the cluster-autoscaler gRPC provider for smart-plug nodes):
            ├── ConfigError         a plugpool configuration that cannot be used (also a ValueError)
            ├── ProviderError       a cluster-autoscaler request refused; ``code`` is a gRPC status name
            ├── KubeError           a Kubernetes API call failed; ``status`` is the HTTP status
            └── PlugError           a smart plug did not answer or answered nonsense

The capacity provider's own errors (``NotFound``, ``Throttled``, ...) are part of the written provider
contract and live in ``contracts.errors``; plugpool's ``ProviderError`` is a different class (its requests
come from cluster-autoscaler, not from a ``Provider``). The modules that raise these errors re-export them
(``controllers.plugpool.pool.ProviderError``, ``controllers.controller.ledger.CapExceeded``, ...).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from contracts import errors as _contract

__all__ = ["CapExceeded", "ConfigError", "ControllersError", "CredentialLapsed", "DrillError", "KubeError", "PlugError",
           "ProviderError", "SlurmRestError", "UserDataError"]


class ControllersError(Exception):
    """Base of every error the ``controllers`` package raises on purpose."""


class DrillError(ControllersError, ValueError):
    """A drill that cannot run: a fraction out of bounds, or a partition with nothing to drill."""


class CapExceeded(ControllersError):
    """A reservation would take a workload past its 24 h spend cap (EUR); carries the amounts."""

    def __init__(self, workload: str, amount: Decimal, committed: Decimal, cap: Decimal) -> None:
        self.workload, self.amount, self.committed, self.cap = workload, amount, committed, cap
        super().__init__(f"workload {workload}: reserving {amount} EUR would exceed its 24 h spend cap of {cap} EUR "
                         f"({committed} EUR already held or spent); ask the approver or accept the shortfall")


class ConfigError(ControllersError, ValueError):
    """The configuration cannot be used; the message names the field, the value and the fix."""


class ProviderError(ControllersError):
    """A request cluster-autoscaler made that plugpool refuses or could not complete. ``code`` is a gRPC name."""

    def __init__(self, message: str, code: str = "FAILED_PRECONDITION"):
        super().__init__(message)
        self.code = code


class KubeError(ControllersError):
    """A Kubernetes API call of plugpool failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


class PlugError(ControllersError):
    """A plug did not answer, refused the credentials or answered something that is not a switch state."""


class UserDataError(ControllersError, ValueError):
    """A launch's user-data cannot be built; says the field, the value and the fix."""

    def __init__(self, code: str, field: str, value: object, fix: str) -> None:
        self.code, self.field, self.value, self.fix = code, field, value, fix
        super().__init__(f"{code}: user-data field {field} is {value!r}; {fix}")


class CredentialLapsed(ControllersError, _contract.ProviderError):
    """The controller's application credential has expired and no new one could be issued (ADR-29)."""

    def __init__(self, credential_id: str, expires_at: datetime, now: datetime, cause: str) -> None:
        super().__init__(f"the controller's application credential {credential_id} expired at "
                         f"{expires_at.isoformat()} (now {now.isoformat()}) and renewing it failed: "
                         f"{cause}; check the credential issuer (OpenBao / the rotation job) and its Keystone "
                         "authority")
        self.credential_id, self.expires_at, self.now = credential_id, expires_at, now


class SlurmRestError(ControllersError):
    """Claims could not be read through slurmrestd; ``code`` is stable (``SLURMREST001``…), the message names the
    URL, the user, the token file and the fix."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        self.code, self.fix = code, fix
        super().__init__(f"{code}: {message}; {fix}")
