"""The decision: may this user run this statement with these settings — ClickHouse's access model, from
``users.xml`` (:mod:`.policy`), applied to what the engine's parse says the statement does (:mod:`.statements`).

The order: source privileges, access management, BACKUP and the SYSTEM commands no profile holds first (497,
whatever the profile: no user has them), then
settings (the profile's ``readonly`` and constraints: 164 ``READONLY``, 452 ``SETTING_CONSTRAINT_VIOLATION``),
then a readonly profile's writes (164), then every privilege the statement
needs on every object (497 ``ACCESS_DENIED``, naming the grant that is missing, as ClickHouse does). What the
parse could not place is refused (497, fail closed). Each refusal carries a stable log code (``CHS00x``,
:data:`.errors.REFUSAL_CODES`) and the statement class and object, for the log line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .access import Access, Need
from .policy import SOURCE_PRIVILEGES, UserPolicy
from .protocol import ClickHouseError

__all__ = ["Refusal", "check_settings", "decide"]

# held by no profile of users.xml: refused with 497 before a readonly profile's 164, as for the sources
_NO_ONE = frozenset({"ACCESS MANAGEMENT", "BACKUP", "SYSTEM OTHER"})


@dataclass(frozen=True)
class Refusal:
    """Why a statement is refused: ClickHouse's code and name, the log code (``CHS00x``), the message, and for the
    log line the statement class and the object."""

    code: int
    name: str
    log_code: str
    message: str
    kind: str = ""
    object: str = ""

    def error(self) -> ClickHouseError:
        """The ClickHouse error the client receives for this refusal."""
        return ClickHouseError.make(self.code, self.name, self.message)


def _number(text: str) -> float | None:
    text = text.strip().strip("'")
    try:
        return float(text)
    except ValueError:
        return None


def _setting(user: str, policy: UserPolicy, name: str, value: str, kind: str) -> Refusal | None:
    profile = policy.profile
    constraint = profile.constraints.get(name)
    if profile.readonly and not (constraint is not None and constraint.changeable_in_readonly):
        return Refusal(164, "READONLY", "CHS003", f"{user}: Cannot modify '{name}' setting in readonly mode", kind,
                       name)
    if constraint is None:
        return None
    if constraint.const:
        return Refusal(452, "SETTING_CONSTRAINT_VIOLATION", "CHS004", f"{user}: Setting {name} should not be "
                       f"changed (the profile {profile.name} fixes it)", kind, name)
    number = _number(value)
    for bound, word, sign in ((constraint.min, "less", -1.0), (constraint.max, "greater", 1.0)):
        limit = _number(bound) if bound is not None else None
        if limit is not None and (number is None or (number - limit) * sign > 0):
            return Refusal(452, "SETTING_CONSTRAINT_VIOLATION", "CHS004", f"{user}: Setting {name} shouldn't be "
                           f"{word} than {bound} (profile {profile.name}; {value[:40]!r} given)", kind, name)
    return None


def check_settings(settings: Iterable[tuple[str, str]], user: str, policy: UserPolicy, kind: str = "SETTINGS",
                   ) -> Refusal | None:
    """The settings a request changes (URL parameters, ``SET``, ``SETTINGS``) against the profile."""
    for name, value in settings:
        refusal = _setting(user, policy, name, value, kind)
        if refusal is not None:
            return refusal
    return None


def _denied(user: str, need: Need, kind: str) -> Refusal:
    if need.privilege == "ACCESS MANAGEMENT":
        return Refusal(497, "ACCESS_DENIED", "CHS006", f"{user}: Not enough privileges: access management "
                       f"({need.what}) is refused; users and profiles live in the users file", kind, need.what)
    grant = need.privilege if need.database is None else \
        f"{need.privilege} ON {need.database}.{need.table or '*'}"
    source = need.privilege in SOURCE_PRIVILEGES
    code = "CHS002" if source else "CHS007"
    reason = f" ({need.what} reaches outside the database; no user of this server has a source grant)" \
        if source else ""
    return Refusal(497, "ACCESS_DENIED", code, f"{user}: Not enough privileges. To execute this query, it's "
                   f"necessary to have the grant {grant}{reason}", kind, need.what)


def decide(user: str, policy: UserPolicy, access: Access) -> Refusal | None:
    """The :class:`Refusal` for ``access`` by ``user``, or None when the policy allows it."""
    if access.problem is not None:
        return Refusal(497, "ACCESS_DENIED", "CHS008", f"{user}: Not enough privileges: {access.problem}; the "
                       "statement cannot be checked, so it is refused", access.kind, access.problem[:80])
    for need in access.needs:  # refused for every user whatever the profile: say so before READONLY
        everyone = need.privilege in _NO_ONE or need.privilege in SOURCE_PRIVILEGES
        if everyone and not policy.granted(need.privilege, need.database, need.table):
            return _denied(user, need, access.kind)
    refusal = check_settings(access.settings, user, policy, access.kind)
    if refusal is not None:
        return refusal
    if policy.profile.readonly and access.writes:
        return Refusal(164, "READONLY", "CHS003", f"{user}: Cannot execute query in readonly mode", access.kind,
                       next((n.what for n in access.needs), ""))
    for need in access.needs:
        if not policy.granted(need.privilege, need.database, need.table):
            return _denied(user, need, access.kind)
    return None
