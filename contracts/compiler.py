"""The contract compiler: schema validation, tier resolution and the feasibility rules (ADR-03).

A contract repository is a directory of YAML files, one workload a file (any depth), plus ``pools.csv``
(the pool catalogue) and an optional ``compiler.yaml`` (``CompilerSettings``). Every problem becomes a
:class:`Finding` with a stable code and ``file:line``; nothing here raises on bad input.

Schema codes: SCH001 malformed YAML, SCH002 unknown field, SCH003 wrong type or value, SCH004 missing
field, TIER001 unknown tier, TIER002 override the tier forbids, TIER003 bespoke (review), TIER004 field
the tier requires, DUP001 workload declared twice. Feasibility codes: see ``contracts.rules``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .alerting import ROUTES_FILE
from .errors import RepoError
from .findings import Finding, Severity, clip
from .pools import CatalogueError, PoolCatalogue, load_catalogue
from .rules import RULES, RuleContext, derived_interval_min
from .schema import Contract, ContractSpec, TierName
from .settings import CompilerSettings
from .tiers import resolve
from .yamlsource import SourceError, SourceMap, load_yaml, read_source

__all__ = ["CompileResult", "CompiledWorkload", "RepoError", "check_repo", "check_text", "load_settings"]

CATALOGUE_FILE = "pools.csv"
SETTINGS_FILE = "compiler.yaml"


@dataclass(frozen=True)
class CompiledWorkload:
    """A contract that compiled, with what the compiler derived for it.

    Attributes:
        contract: the resolved contract.
        file: the contract file it came from.
        eligible_pools: reclaimable discount pools that fit one unit.
        committed_halls: halls with the business unit's committed capacity that fits one unit.
        expected_rate_pct_h: the reclaim rate planned with (%/h).
        derived_interval_min: the Young–Daly checkpoint interval (minutes), when the contract checkpoints.
    """

    contract: Contract
    file: str
    eligible_pools: int
    committed_halls: int
    expected_rate_pct_h: Decimal
    derived_interval_min: int | None

    @property
    def interval_min(self) -> int | None:
        """The checkpoint interval in minutes: the contract's own, else the derived one, else None."""
        return self.contract.checkpoint_interval_min or self.derived_interval_min


@dataclass
class CompileResult:
    """The outcome of compiling a contract repository: the workloads that compiled and every finding."""

    workloads: list[CompiledWorkload] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: int = 0

    @property
    def errors(self) -> list[Finding]:
        """The findings that refuse a contract."""
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        """The findings that flag a contract for its owner (refusing it only with ``--strict``)."""
        return [f for f in self.findings if f.severity is Severity.WARNING]

    def refused(self) -> set[str]:
        """The files with at least one error."""
        return {f.file for f in self.errors}


def _value_at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        in_dict = isinstance(data, dict) and part in data
        in_list = isinstance(data, list) and isinstance(part, int) and part < len(data)
        if not (in_dict or in_list):
            return None
        data = data[part]
    return data


def _schema_findings(exc: ValidationError, data: Any, source: SourceMap) -> list[Finding]:
    out: list[Finding] = []
    workload = data.get("workload") if isinstance(data, dict) else None
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in ("function-after",))
        path = ".".join(str(p) for p in loc) or "<contract>"
        value = clip(_value_at(data, loc))
        kind = err["type"]
        if kind == "extra_forbidden":
            code, rule = "SCH002", f"unknown field {path!r}."
            fix = "remove it or correct its spelling (see docs/contracts.md)."
        elif kind == "missing":
            code, rule, fix = "SCH004", f"required field {path!r} is missing.", f"add {path}."
        elif loc == ("tier",):
            code = "TIER001"
            rule = f"unknown tier {value!r}."
            fix = "use one of T1, T2, T3, T4, T5, or bespoke with nearest_tier."
        else:
            code = "SCH003"
            rule = clip(err["msg"].removeprefix("Value error, "), 200) + "."
            fix = f"correct the value of {path}."
        out.append(Finding(code, Severity.ERROR, path, value, rule, fix, source.file,
                           source.line_of(path), workload if isinstance(workload, str) else None))
    return out


def _source_finding(exc: SourceError) -> Finding:
    fix = "fix the YAML syntax at that line." if exc.code == "SCH001" else "as the rule says."
    return Finding(exc.code, Severity.ERROR, "<file>", None, exc.message + ".", fix, exc.file, exc.line)


def check_text(text: str, file: str, catalogue: PoolCatalogue, settings: CompilerSettings
               ) -> tuple[CompiledWorkload | None, list[Finding]]:
    """Compile one contract file's text."""
    try:
        data, source = load_yaml(text, file)
    except SourceError as exc:
        return None, [_source_finding(exc)]
    if not isinstance(data, dict):
        return None, [Finding("SCH001", Severity.ERROR, "<file>", type(data).__name__,
                              "a contract is a YAML mapping of fields.", "write the contract as key: value lines.",
                              file, 1)]
    try:
        spec = ContractSpec.model_validate(data)
    except ValidationError as exc:
        return None, _schema_findings(exc, data, source)
    contract, findings = resolve(spec)
    findings = [f.at(file, source.line_of(f.field)) for f in findings]
    if contract is None:
        return None, findings
    ctx = RuleContext(contract, settings, catalogue)
    for rule in RULES:
        findings.extend(f.at(file, source.line_of(f.field)) for f in rule.check(ctx))
    if any(f.severity is Severity.ERROR for f in findings):
        return None, findings
    compiled = CompiledWorkload(
        contract=contract, file=file, eligible_pools=len(ctx.eligible),
        committed_halls=len({p.hall for p in ctx.committed}), expected_rate_pct_h=ctx.expected_rate_pct_h(),
        derived_interval_min=derived_interval_min(contract, settings))
    return compiled, findings


def load_settings(path: Path | None, root: Path | None = None) -> CompilerSettings:
    """Load the compiler settings from YAML; defaults when ``path`` is None or absent.

    Args:
        path: the settings file.
        root: the repository the file must lie in (a symlink out of it is refused); default its own folder.

    Raises:
        RepoError: the file is unreadable, not valid YAML, or a setting is invalid (the message names the line).
    """
    if path is None or not path.exists():
        return CompilerSettings()
    try:
        text = read_source(path, root or path.resolve().parent)
        data, source = load_yaml(text, str(path))
        return CompilerSettings.model_validate(data or {})
    except SourceError as exc:
        raise RepoError(str(exc)) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise RepoError(f"{path}:{source.line_of(key)}: {key}: {err['msg']}") from exc


def contract_files(repo: Path) -> list[Path]:
    files = [p for p in sorted(repo.rglob("*")) if p.suffix in (".yaml", ".yml") and p.is_file()]
    # the route tree `sco contracts compile` writes is no contract, even when --out lies inside the repository
    return [p for p in files if p.name not in (SETTINGS_FILE, ROUTES_FILE)
            and not any(part.startswith(".") for part in p.parts)]


def check_repo(repo: Path, catalogue_path: Path | None = None, settings_path: Path | None = None,
               display_root: Path | None = None) -> CompileResult:
    """Compile every contract in ``repo``. Raises :class:`RepoError` only when the repository itself is unusable."""
    if not repo.is_dir():
        raise RepoError(f"REPO001: {repo} is not a directory; pass the contract repository (e.g. deploy/contracts).")
    cat_path = catalogue_path or repo / CATALOGUE_FILE
    if not cat_path.exists():
        raise RepoError(
            f"REPO002: no pool catalogue at {cat_path}; add {CATALOGUE_FILE} to the repository or pass --catalogue.")
    if catalogue_path is None and not cat_path.resolve().is_relative_to(repo.resolve()):
        raise RepoError(f"{cat_path}:1: SRC006: a symlink to a file outside the repository; copy the catalogue "
                        "in or pass it with --catalogue.")
    try:
        catalogue = load_catalogue(cat_path)
    except CatalogueError as exc:
        raise RepoError(str(exc)) from None
    settings = load_settings(settings_path or repo / SETTINGS_FILE, None if settings_path else repo)
    result = CompileResult()
    seen: dict[str, str] = {}
    root = display_root or Path.cwd()
    for path in contract_files(repo):
        shown = str(path.relative_to(root)) if path.is_absolute() and path.is_relative_to(root) else str(path)
        result.files += 1
        try:
            text = read_source(path, repo, shown)
        except SourceError as exc:  # named, and the other files are still checked
            result.findings.append(_source_finding(exc))
            continue
        compiled, findings = check_text(text, shown, catalogue, settings)
        result.findings.extend(findings)
        if compiled is None:
            continue
        name = compiled.contract.workload
        if name in seen:
            result.findings.append(Finding(
                "DUP001", Severity.ERROR, "workload", name, f"workload {name!r} is also declared in {seen[name]}.",
                "one file a workload: merge the two or rename one.", shown, 1, name))
            continue
        seen[name] = shown
        result.workloads.append(compiled)
    return result


def tier_of(workload: CompiledWorkload) -> TierName:
    return workload.contract.tier
