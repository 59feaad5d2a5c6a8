"""Typed errors of the provider contract (ADR-05). Each carries the values that caused it and says what to do.

Standard library only, so callers can catch them without loading pydantic.
"""

from __future__ import annotations

__all__ = [
    "CapacityUnavailable",
    "InvalidRequest",
    "NotFound",
    "NotOwned",
    "ProviderError",
    "QuotaExceeded",
    "Throttled",
]


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
