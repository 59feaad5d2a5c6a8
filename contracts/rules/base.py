"""What a feasibility rule sees: one resolved contract, the settings and the catalogue."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from ..findings import Finding
from ..pools import Pool, PoolCatalogue
from ..schema import Contract
from ..settings import CompilerSettings

__all__ = ["Rule", "RuleContext"]


@dataclass(frozen=True)
class RuleContext:
    """What a feasibility rule sees: one resolved contract, the compiler settings and the pool catalogue."""

    contract: Contract
    settings: CompilerSettings
    catalogue: PoolCatalogue

    @property
    def eligible(self) -> list[Pool]:
        """The reclaimable discount pools that fit one unit of the contract."""
        return self.catalogue.reclaimable_for(self.contract, self.settings.discount_threshold)

    @property
    def committed(self) -> list[Pool]:
        """The business unit's committed pools that fit one unit of the contract."""
        return self.catalogue.committed_for(self.contract)

    def expected_rate_pct_h(self) -> Decimal:
        """The reclaim rate to plan with (%/h).

        The eligible pools' mean observed rate when the catalogue has one, never below the platform's
        assumed rate.
        """
        observed = [p.interruption_rate_pct_h for p in self.eligible if p.interruption_rate_pct_h > 0]
        mean = sum(observed, Decimal(0)) / len(observed) if observed else Decimal(0)
        return max(mean, self.settings.reclaim_rate_pct_h)


@dataclass(frozen=True)
class Rule:
    """A feasibility rule: its finding code, a title, and the check that returns its findings."""

    code: str
    title: str
    check: Callable[[RuleContext], list[Finding]]
