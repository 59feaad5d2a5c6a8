"""Every error the ``contracts`` package defines, in one place. Standard library only.

Two roots: ``ContractsError`` for what goes wrong compiling, signing, publishing or verifying contracts
and bundles; ``ProviderError`` for the written provider contract (ADR-05), raised by providers (the
OpenStack adapter, the simulated region) and caught by their callers. Each carries the values that caused
it and says what to do.

    Exception
    ├── ContractsError
    │   ├── SourceError          a YAML file cannot be parsed (file, line)
    │   ├── RepoError            the contract repository cannot be read (directory, catalogue, settings)
    │   ├── CatalogueError       the pool catalogue cannot be read or a row is invalid
    │   ├── GovernanceError      governed fields changed without the governance signature (ADR-30)
    │   ├── CanonicalError       a value with no canonical JSON form (also a ValueError)
    │   ├── SignatureError       a signature does not verify
    │   ├── KeyError_            a key file is missing, unreadable or not ECDSA P-256
    │   ├── BundleError          a bundle that must not be used (code BND001..BND005)
    │   ├── AgentRecordError     an agent-bundle entry with a missing, unknown or mistyped key (also a ValueError)
    │   └── AlertRoutingError    ALR001: a webhook base URL Alertmanager cannot use (also a ValueError)
    └── ProviderError            every error a ``Provider`` raises on purpose
        ├── InvalidRequest       refused before doing anything
        ├── CapacityUnavailable  fewer free instances than asked for
        ├── QuotaExceeded        the project's quota would be exceeded
        ├── Throttled            a mutating call over the token budget or rate limit
        ├── NotFound             an unknown pool, flavour, instance or reservation
        └── NotOwned             termination refused: not tagged as ours (ADR-11, ADR-29)

The modules that raise them re-export them (``contracts.signing.SignatureError``,
``contracts.provider_errors.NotFound``, ...), so either import works.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentRecordError",
    "AlertRoutingError",
    "BundleError",
    "CanonicalError",
    "CapacityUnavailable",
    "CatalogueError",
    "ContractsError",
    "GovernanceError",
    "InvalidRequest",
    "KeyError_",
    "NotFound",
    "NotOwned",
    "ProviderError",
    "QuotaExceeded",
    "RepoError",
    "SignatureError",
    "SourceError",
    "Throttled",
]


class ContractsError(Exception):
    """Base of the errors of compiling, signing, publishing and verifying contracts and bundles."""


class CanonicalError(ContractsError, ValueError):
    """A value that has no canonical form (a float, a set, an object)."""


class SignatureError(ContractsError):
    """The signature does not verify against the given key (tampered blob, wrong key or corrupt file)."""


class KeyError_(ContractsError):
    """A key file is missing, unreadable or not an ECDSA P-256 key."""


class BundleError(ContractsError):
    """A bundle that must not be used: unreadable, unsigned, not canonical, or not a valid successor.

    Not signed by the expected key(s), or of an older generation or another partition than the previous one.

    Attributes:
        code: the stable refusal code (``BND001``..``BND005``, see ``contracts.bundle_verify``).
        message: the reason without the code.
    """

    def __init__(self, message: str, code: str = "BND001") -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class GovernanceError(ContractsError):
    """A compile changed governed fields and no capacity-governance key signed it (ADR-30).

    Attributes:
        changes: one dict per changed field, with ``workload``, ``field``, ``from`` and ``to``.
    """

    def __init__(self, changes: list[dict[str, Any]]) -> None:
        lines = "; ".join(f"{c['workload']}.{c['field']}: {c['from']} -> {c['to']}" for c in changes)
        super().__init__(
            f"{len(changes)} governed field change(s) need the capacity-governance signature (ADR-30): {lines}. "
            "Re-run with --governance-key <governance private key>, signed by the governance group.")
        self.changes = changes


class RepoError(ContractsError):
    """The repository itself cannot be read (missing directory, catalogue or settings)."""


class CatalogueError(ContractsError):
    """The pool catalogue cannot be read or a row is invalid."""


class SourceError(ContractsError):
    """A YAML file cannot be read or parsed; carries the file, line and stable code for a finding.

    Codes: ``SCH001`` malformed YAML; ``SRC001`` not UTF-8 text (or a NUL/control byte); ``SRC002`` file too
    large; ``SRC003`` nesting too deep; ``SRC004`` too many aliases; ``SRC005`` alias expansion too large;
    ``SRC006`` a symlink that leaves the repository.
    """

    def __init__(self, file: str, line: int, message: str, code: str = "SCH001") -> None:
        super().__init__(f"{file}:{line}: {code}: {message}")
        self.file, self.line, self.message, self.code = file, line, message, code


class ProviderError(Exception):
    """Base of every error a ``Provider`` raises on purpose."""


class InvalidRequest(ProviderError):
    """A request the provider refuses before doing anything (e.g. a negative count)."""

    def __init__(self, field: str, value: object, fix: str) -> None:
        self.field, self.value, self.fix = field, value, fix
        super().__init__(f"invalid {field}={value!r}: {fix}")


class CapacityUnavailable(ProviderError):
    """The pool has fewer free instances than asked for (nothing was launched)."""

    def __init__(self, pool_id: str, requested: int, available: int, detail: str = "") -> None:
        self.pool_id, self.requested, self.available = pool_id, requested, available
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"pool {pool_id}: {requested} instance(s) requested, {available} available{extra}; "
            "try another pool or a smaller count"
        )


class QuotaExceeded(ProviderError):
    """The project's quota would be exceeded (nothing was launched)."""

    def __init__(self, resource: str, requested: int, used: int, limit: int, project: str = "") -> None:
        self.resource, self.requested, self.used, self.limit, self.project = (
            resource, requested, used, limit, project)
        where = f" in project {project}" if project else ""
        super().__init__(
            f"quota exceeded for {resource}{where}: requested {requested}, used {used} of {limit} "
            f"(headroom {max(limit - used, 0)}); launch at most {max(limit - used, 0)} or raise the quota"
        )


class Throttled(ProviderError):
    """A mutating call was refused by the token budget (client side) or by the provider's rate limit."""

    def __init__(self, operation: str, retry_after_s: float, budget_per_s: float, key: str = "") -> None:
        self.operation, self.retry_after_s, self.budget_per_s, self.key = (
            operation, retry_after_s, budget_per_s, key)
        scope = f" for {key}" if key else ""
        super().__init__(
            f"{operation} throttled{scope}: budget {budget_per_s:g} mutating call(s)/s spent; "
            f"retry in {retry_after_s:.3f} s"
        )


class NotFound(ProviderError):
    """An unknown pool, flavour, instance or reservation."""

    def __init__(self, kind: str, name: str, known: tuple[str, ...] = ()) -> None:
        self.kind, self.name, self.known = kind, name, known
        hint = ""
        if known:
            shown = ", ".join(known[:5]) + (f", … ({len(known)} in all)" if len(known) > 5 else "")
            hint = f"; known: {shown}"
        super().__init__(f"unknown {kind} {name!r}{hint}")


class NotOwned(ProviderError):
    """Termination refused: the instance does not carry the orchestrator's ownership tags (ADR-11, ADR-29)."""

    def __init__(self, instance_id: str, missing_tags: tuple[str, ...], tags: tuple[str, ...] = ()) -> None:
        self.instance_id, self.missing_tags, self.tags = instance_id, missing_tags, tags
        super().__init__(
            f"refusing to terminate instance {instance_id}: it lacks the ownership tag(s) "
            f"{', '.join(missing_tags)} (has: {', '.join(tags) or 'none'}); only instances SCO launched and "
            "tagged may be terminated — ask the project's owner to remove it"
        )


class AgentRecordError(ContractsError, ValueError):
    """An agent-bundle entry that lacks a key, carries an unknown one, or holds a value of the wrong type."""


class AlertRoutingError(ContractsError, ValueError):
    """A webhook base URL Alertmanager cannot use (code ``ALR001``)."""

    code = "ALR001"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")
