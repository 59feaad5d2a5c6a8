"""The access policy, read from a ClickHouse ``users.xml``: each profile's settings and constraints, each user's
grants — the same file a real ClickHouse server is given (``deploy/clickhouse/users.xml``; the front end reads
the copy beside this module, and a test keeps the two identical).

The front end's users file names each user's profile as ``default`` or ``readonly``; they are the ``users.xml``
profiles ``sco_default`` and ``sco_readonly``, and a user takes the grants every ``users.xml`` user of that
profile has (the loader refuses a ``users.xml`` whose users of one profile differ in their grants).

Privileges follow ClickHouse's hierarchy (https://clickhouse.com/docs/sql-reference/statements/grant): ``ALL``
holds everything, ``CREATE`` holds ``CREATE TABLE``…, ``SOURCES`` holds ``FILE``, ``URL``, ``S3`` …; a grant on
``db.*`` covers every table of ``db``, on ``*.*`` every table.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import PolicyError

__all__ = ["POLICY_FILE", "SOURCE_PRIVILEGES", "Constraint", "Grant", "Policy", "Profile", "UserPolicy",
           "load_policy"]

POLICY_FILE = Path(__file__).with_name("users.xml")
SOURCE_PRIVILEGES = ("FILE", "URL", "S3", "HDFS", "REMOTE", "MYSQL", "POSTGRES", "SQLITE", "ODBC", "JDBC", "MONGO",
                     "REDIS", "AZURE", "KAFKA", "NATS", "RABBITMQ", "HIVE")
# a privilege -> the privileges it holds (ClickHouse's AccessType hierarchy, the parts this front end checks)
_HOLDS: dict[str, tuple[str, ...]] = {
    "ALL": ("SELECT", "INSERT", "ALTER", "CREATE", "DROP", "TRUNCATE", "OPTIMIZE", "SHOW", "DICTGET", "SYSTEM",
            "KILL QUERY", "SOURCES", "ACCESS MANAGEMENT", "BACKUP", "CREATE FUNCTION", "DROP FUNCTION"),
    "CREATE": ("CREATE DATABASE", "CREATE TABLE", "CREATE VIEW", "CREATE DICTIONARY", "CREATE TEMPORARY TABLE"),
    "DROP": ("DROP DATABASE", "DROP TABLE", "DROP VIEW", "DROP DICTIONARY"),
    "SHOW": ("SHOW DATABASES", "SHOW TABLES", "SHOW COLUMNS", "SHOW DICTIONARIES"),
    "SYSTEM": ("SYSTEM FLUSH LOGS", "SYSTEM RELOAD DICTIONARY", "SYSTEM SHUTDOWN", "SYSTEM DROP CACHE",
               "SYSTEM RELOAD CONFIG", "SYSTEM OTHER"),
    "SOURCES": SOURCE_PRIVILEGES,
}
_ALIASES = {"DICTGET": "DICTGET", "KILL": "KILL QUERY", "SYSTEM FLUSH": "SYSTEM FLUSH LOGS",
            "SYSTEM RELOAD DICTIONARIES": "SYSTEM RELOAD DICTIONARY", "POSTGRESQL": "POSTGRES", "READ": "FILE"}
_GRANT = re.compile(r"^\s*GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<db>[A-Za-z0-9_*]+)\.(?P<table>[A-Za-z0-9_*]+)\s*$",
                    re.I | re.S)
JSON_PROFILES = {"default": "sco_default", "readonly": "sco_readonly"}



def expand(privilege: str) -> frozenset[str]:
    """``privilege`` and every privilege it holds."""
    name = _ALIASES.get(privilege, privilege)
    out = {name}
    for held in _HOLDS.get(name, ()):
        out |= expand(held)
    return frozenset(out)


@dataclass(frozen=True)
class Grant:
    privileges: frozenset[str]  # expanded
    database: str  # "*" for every database
    table: str  # "*" for every table

    def covers(self, privilege: str, database: str | None, table: str | None) -> bool:
        """Whether this grant holds ``privilege`` on ``database.table`` (None: the privilege is global)."""
        if privilege not in self.privileges:
            return False
        if database is None:
            return self.database == "*"
        return self.database in ("*", database) and (table is None or self.table in ("*", table))


@dataclass(frozen=True)
class Constraint:
    const: bool = False
    min: str | None = None
    max: str | None = None
    changeable_in_readonly: bool = False


@dataclass(frozen=True)
class Profile:
    name: str
    settings: dict[str, str]
    constraints: dict[str, Constraint]

    @property
    def readonly(self) -> int:
        """The profile's ``readonly`` setting (0: may write, 1 and 2: may only read)."""
        return int(self.settings.get("readonly", "0") or 0)


@dataclass(frozen=True)
class UserPolicy:
    profile: Profile
    grants: tuple[Grant, ...]

    def granted(self, privilege: str, database: str | None = None, table: str | None = None) -> bool:
        """True when one of the user's grants covers ``privilege`` on ``database.table``."""
        return any(g.covers(privilege, database, table) for g in self.grants)


@dataclass(frozen=True)
class Policy:
    profiles: dict[str, Profile]
    users: dict[str, UserPolicy] = field(default_factory=dict)  # users.xml's own users, by name

    def for_profile(self, json_profile: str) -> UserPolicy:
        """The policy of a users-file user with profile ``default`` or ``readonly``."""
        xml_profile = JSON_PROFILES[json_profile]
        for user in self.users.values():
            if user.profile.name == xml_profile:
                return user
        return UserPolicy(self.profiles[xml_profile], ())  # no grants: every statement is refused


def parse_grant(text: str) -> Grant:
    """The grant of a ``GRANT <privileges> ON <db>.<table>`` line, its privileges expanded; raises ValueError for any
    other text."""
    match = _GRANT.match(text)
    if match is None:
        raise ValueError(f"{text[:80]!r} is not 'GRANT <privileges> ON <db>.<table>'")
    privileges: frozenset[str] = frozenset()
    for item in match.group("privs").split(","):
        privileges |= expand(" ".join(item.upper().split()))
    return Grant(privileges, match.group("db"), match.group("table"))


def _profile(path: Path, node: ET.Element) -> Profile:
    settings = {child.tag: (child.text or "").strip() for child in node if child.tag != "constraints"}
    constraints: dict[str, Constraint] = {}
    for item in node.findall("constraints/*"):
        kinds = {child.tag for child in item}
        unknown = kinds - {"const", "min", "max", "changeable_in_readonly", "readonly", "writable"}
        if unknown:
            raise PolicyError(path, f"profiles/{node.tag}/constraints/{item.tag}", f"has {sorted(unknown)[0]}")
        constraints[item.tag] = Constraint(const="const" in kinds or "readonly" in kinds,
                                           min=item.findtext("min"), max=item.findtext("max"),
                                           changeable_in_readonly="changeable_in_readonly" in kinds)
    return Profile(node.tag, settings, constraints)


def load_policy(path: Path | str = POLICY_FILE) -> Policy:
    """Read ``users.xml``: profiles, and users with their profile and grants."""
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise PolicyError(path, "(file)", f"cannot be read ({exc})") from None
    profiles = {node.tag: _profile(path, node) for node in root.findall("profiles/*")}
    for needed in JSON_PROFILES.values():
        if needed not in profiles:
            raise PolicyError(path, f"profiles/{needed}", "is missing")
    users: dict[str, UserPolicy] = {}
    by_profile: dict[str, tuple[Grant, ...]] = {}
    for node in root.findall("users/*"):
        profile = node.findtext("profile") or ""
        if profile not in profiles:
            raise PolicyError(path, f"users/{node.tag}/profile", f"names no profile ({profile!r})")
        try:
            grants = tuple(parse_grant(q.text or "") for q in node.findall("grants/query"))
        except ValueError as exc:
            raise PolicyError(path, f"users/{node.tag}/grants", str(exc)) from None
        if by_profile.setdefault(profile, grants) != grants:
            raise PolicyError(path, f"users/{node.tag}/grants", f"differ from the other {profile} users' grants")
        users[node.tag] = UserPolicy(profiles[profile], grants)
    return Policy(profiles, users)
