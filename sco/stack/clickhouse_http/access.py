"""What a statement reads, writes and sets, read from chDB's own parse — never from the raw text.

:func:`analyse` takes two outputs of the engine's parser for one statement, neither of which executes it:
``EXPLAIN AST`` (the tree: every table expression, function, engine and dictionary source) and
``formatQuerySingleLine`` (the same statement re-printed canonically: keywords, backquoted identifiers, no
comments — so the statement class and the ``SET``/``SETTINGS`` names are read from text the engine wrote).
The answer is an :class:`Access`: the statement class, the privileges it needs on which objects (ClickHouse's
own ``getRequiredAccess`` rules, the parts SCO's users can meet), the settings it changes, and the table names
that chDB resolves in its ``default`` database — which, as in ``clickhouse-local``, falls back to the file
system (``SELECT * FROM '/etc/passwd'``) when no such table exists, so the gate asks the engine and demands
``FILE`` otherwise. Anything not recognised is a ``problem``: the gate refuses it (fail closed).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .sources import (
    DATABASE_ENGINES,
    DICTIONARY_SOURCES,
    SAFE_TABLE_FUNCTIONS,
    TABLE_ENGINES,
    scalar_need,
    source_of,
    url_source,
)
from .sqltokens import Token

__all__ = ["ACCESS_OBJECTS", "OVERLAY_DATABASE", "Access", "Need", "name_at", "names_a_path", "overlay_source",
           "setting_pairs", "settings_clauses", "skip", "tree", "word_list"]

OVERLAY_DATABASE = "default"  # chDB's default database: an overlay of Atomic and the file system
_LINE = re.compile(r"^( *)(\S.*?)\s*$")
_FUNCTION = re.compile(r"^(Function|FunctionWithKeyValueArguments)\s+(\S+)")
_IN_FUNCTION = re.compile(r"^Function (global)?(not)?(null)?in(ignoreset)?\b", re.I)
_READS = {"SELECT", "SHOW", "DESCRIBE", "EXISTS", "EXPLAIN", "USE", "SET", "CHECK"}
ACCESS_OBJECTS = {"USER", "USERS", "ROLE", "ROLES", "QUOTA", "QUOTAS", "POLICY", "ROW", "PROFILE", "SETTINGS",
                   "MASKING", "NAMED", "GRANTS", "ACCESS", "PRIVILEGES", "PROFILES", "POLICIES", "CURRENT",
                   "ENABLED", "SETTINGS PROFILE"}
_OBJECT_KINDS = {"TABLE": "TABLE", "VIEW": "VIEW", "DICTIONARY": "DICTIONARY", "DATABASE": "DATABASE",
                 "FUNCTION": "FUNCTION"}


@dataclass(frozen=True)
class Need:
    """A privilege on ``database.table`` (None: global), and what needs it (for the message)."""

    privilege: str
    database: str | None
    table: str | None
    what: str


@dataclass
class Access:
    kind: str = ""  # the statement class: SELECT, INSERT, CREATE TABLE, SYSTEM FLUSH LOGS, …
    needs: list[Need] = field(default_factory=list)
    settings: list[tuple[str, str]] = field(default_factory=list)
    overlay: list[str] = field(default_factory=list)  # names looked up in the overlay database
    engines: set[str] = field(default_factory=set)  # ``ENGINE = name`` of the canonical text, lower case
    problem: str | None = None  # could not be read: refused

    @property
    def writes(self) -> bool:
        """True unless the statement class only reads (SELECT, SHOW, DESCRIBE, …): a readonly user may run only
        those."""
        return self.kind.split(" ")[0] not in _READS

    def need(self, privilege: str, database: str | None, table: str | None, what: str = "") -> None:
        """Record that the statement needs ``privilege`` on ``database.table`` (``what`` names the object in a
        refusal)."""
        self.needs.append(Need(privilege, database, table, what or _object(database, table)))


def _object(database: str | None, table: str | None) -> str:
    return "*.*" if database is None else f"{database}.{table or '*'}"


def names_a_path(name: str) -> bool:
    """Whether chDB's overlay database would read ``name`` from outside when no table has that name: anything
    with a scheme, a slash, a glob or a home; a bare name only when it names a file in the server's working
    directory (chDB resolves it there; that directory is the service account's)."""
    if "://" in name or any(c in name for c in "/\\*?{}[~") or name in (".", ".."):
        return True
    return os.path.lexists(name)


def overlay_source(name: str) -> str:
    """The source privilege a name that is no table in the overlay database reads with."""
    return url_source(name) if "://" in name else "FILE"


# -- the canonical text ---------------------------------------------------------------------------------------
def word_list(tokens: list[Token]) -> list[str]:
    """The bare words of ``tokens``, upper-cased: what a statement's class and clauses are recognised by."""
    return [t.text.upper() for t in tokens if t.kind == "word"]


def name_at(tokens: list[Token], i: int) -> tuple[str | None, str, int]:
    """``db.name`` or ``name`` at ``i``: (database or None, name, index after)."""
    if i >= len(tokens) or tokens[i].kind not in ("word", "ident"):
        return None, "", i
    if i + 2 < len(tokens) and tokens[i + 1].text == "." and tokens[i + 2].kind in ("word", "ident"):
        return tokens[i].text, tokens[i + 2].text, i + 3
    return None, tokens[i].text, i + 1


def skip(tokens: list[Token], i: int, *words: str) -> int:
    """The index of the first token from ``i`` that is not one of ``words`` (bare words, any case)."""
    while i < len(tokens) and tokens[i].kind == "word" and tokens[i].text.upper() in words:
        i += 1
    return i


def setting_pairs(tokens: list[Token], start: int) -> list[tuple[str, str]]:
    """``name = value, …`` from ``start`` in canonical tokens (a value is the tokens up to the next top comma)."""
    pairs: list[tuple[str, str]] = []
    i, depth = start, 0
    while i + 1 < len(tokens) and tokens[i].kind in ("word", "ident") and tokens[i + 1].text == "=":
        name, i, value = tokens[i].text, i + 2, []
        while i < len(tokens) and not (depth == 0 and (tokens[i].text == "," or (
                tokens[i].kind == "word" and tokens[i].text.upper() in ("FORMAT", "SETTINGS")))):
            depth += tokens[i].text in "([" if tokens[i].kind == "punct" else 0
            depth -= tokens[i].text in ")]" if tokens[i].kind == "punct" else 0
            value.append(tokens[i].text)
            i += 1
        pairs.append((name, " ".join(value)))
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
    return pairs


def settings_clauses(tokens: list[Token]) -> list[tuple[str, str]]:
    """The ``name = value`` pairs of every ``SETTINGS`` clause in the statement, so each setting meets the profile's
    constraints."""
    out: list[tuple[str, str]] = []
    for i, token in enumerate(tokens):
        if token.kind == "word" and token.text.upper() == "SETTINGS":
            out += setting_pairs(tokens, i + 1)
    return out


# -- the tree ------------------------------------------------------------------------------------------------
@dataclass
class _Node:
    depth: int
    text: str
    parent: str
    grandparent: str


def _nodes(ast: str) -> list[_Node]:
    nodes: list[_Node] = []
    stack: dict[int, str] = {}
    for line in ast.splitlines():
        match = _LINE.match(line.replace("\\t", "").strip("\t"))
        if match is None:
            continue
        depth, text = len(match.group(1)), match.group(2)
        stack[depth] = text
        nodes.append(_Node(depth, text, stack.get(depth - 1, "") if depth else "",
                           stack.get(depth - 2, "") if depth > 1 else ""))
    return nodes


def _cte_names(tokens: list[Token]) -> set[str]:
    """``WITH name AS (…)``: names that are no tables."""
    return {tokens[i].text for i in range(len(tokens) - 2) if tokens[i].kind in ("word", "ident")
            and tokens[i + 1].kind == "word" and tokens[i + 1].text.upper() == "AS" and tokens[i + 2].text == "("}


def _resolve(name: str, tokens: list[Token], current: str) -> list[tuple[str, str]]:
    """The (database, table) a ``TableIdentifier`` may name: the tree prints ``db.t`` and `` `db.t` `` alike
    (and an identifier with a line break over two lines), the canonical text tells them apart; every reading
    the text allows is kept, and none is a name the parse and the text disagree on."""
    found = [(a.text, c.text) for a, b, c in zip(tokens, tokens[1:], tokens[2:], strict=False)
             if b.text == "." and b.kind == "punct" and a.kind in ("word", "ident") and c.kind in ("word", "ident")
             and f"{a.text}.{c.text}" == name]
    if any(t.kind in ("word", "ident") and t.text == name for t in tokens):
        found.append((current, name))
    return found  # empty: the tree names a table the text does not show, refused


def tree(access: Access, ast: str, tokens: list[Token], current: str, table_privilege: str) -> None:
    """Tables, table functions, functions, engines and dictionary sources of the tree."""
    ctes = _cte_names(tokens)
    access.engines = {tokens[i + 2].text.lower() for i in range(len(tokens) - 2) if tokens[i].kind == "word"
                      and tokens[i].text.upper() == "ENGINE" and tokens[i + 1].text == "="}
    for node in _nodes(ast):
        in_operand = node.text.startswith("Identifier ") and node.parent.startswith("ExpressionList") \
            and _IN_FUNCTION.match(node.grandparent) is not None  # ``x IN t``: t is a table (or a file)
        if node.text.startswith("TableIdentifier ") or in_operand:
            name = node.text.split(" ", 1)[1].split(" (alias ")[0]
            if name in ctes:
                continue
            readings = _resolve(name, tokens, current)
            if not readings:
                access.problem = f"the table name {name[:80]!r} could not be placed"
            for database, table in readings:
                access.need(table_privilege, database, table)
                if database == OVERLAY_DATABASE:
                    access.overlay.append(table)
            continue
        function = _FUNCTION.match(node.text)
        if function is not None:
            _function(access, function.group(1), function.group(2).lower(), node.parent)


def _function(access: Access, kind: str, name: str, parent: str) -> None:
    if parent.startswith("Storage definition") and name in access.engines:
        database = access.kind == "CREATE DATABASE"
        known = DATABASE_ENGINES if database else TABLE_ENGINES
        source = source_of(name)
        if source is not None:
            access.need(source, None, None, f"the {'database ' if database else ''}engine {name}")
        elif name not in known and not (not database and name.endswith("mergetree")):
            access.problem = f"the {'database ' if database else ''}engine {name} is not known to this server"
        return
    if kind == "FunctionWithKeyValueArguments":
        if parent.startswith("Dictionary definition"):
            source = DICTIONARY_SOURCES.get(name, "?")
            if source == "?":
                access.problem = f"the dictionary source {name} is not known to this server"
            elif source:
                access.need(source, None, None, f"the dictionary source {name.upper()}")
        return
    table_function = parent.startswith(("TableExpression", "InsertQuery"))
    source = source_of(name) if table_function else scalar_need(name)
    if source is not None:
        access.need(source, None, None, f"the {'table ' if table_function else ''}function {name}()")
    elif table_function and name not in SAFE_TABLE_FUNCTIONS:
        access.problem = f"the table function {name}() is not known to this server"
