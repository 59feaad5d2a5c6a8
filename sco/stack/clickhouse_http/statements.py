"""The statement class and the privileges each class needs, the way ClickHouse's interpreters ask for them
(``getRequiredAccess``): read from the canonical text chDB printed, the tables and functions from its tree
(:mod:`.access`). :func:`analyse` is the one entry point.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from .access import (
    ACCESS_OBJECTS,
    OVERLAY_DATABASE,
    Access,
    name_at,
    setting_pairs,
    settings_clauses,
    skip,
    tree,
    word_list,
)
from .sqltokens import Token, tokenize

__all__ = ["analyse"]

_STARTS = ("SELECT", "WITH", "INSERT", "CREATE", "ATTACH", "REPLACE", "ALTER", "DROP", "DETACH", "UNDROP",
           "TRUNCATE", "OPTIMIZE", "RENAME", "EXCHANGE", "SYSTEM", "KILL", "SHOW", "DESCRIBE", "DESC", "EXISTS",
           "USE", "SET", "GRANT", "REVOKE", "BACKUP", "RESTORE", "DELETE", "UPDATE", "CHECK", "EXPLAIN", "MOVE",
           "EXECUTE", "BEGIN", "COMMIT", "ROLLBACK", "START")
_CREATE_KINDS = {"TABLE": "CREATE TABLE", "VIEW": "CREATE VIEW", "DICTIONARY": "CREATE DICTIONARY",
                 "DATABASE": "CREATE DATABASE", "FUNCTION": "CREATE FUNCTION"}
_SYSTEM: dict[tuple[str, ...], str] = {
    ("FLUSH", "LOGS"): "SYSTEM FLUSH LOGS", ("RELOAD", "DICTIONARY"): "SYSTEM RELOAD DICTIONARY",
    ("RELOAD", "DICTIONARIES"): "SYSTEM RELOAD DICTIONARY"}


def _target(access: Access, tokens: list[Token], i: int, current: str, privilege: str) -> int:
    database, name, end = name_at(tokens, i)
    if name:
        access.need(privilege, database or current, name)
    return end


def _has(words: list[str], *seq: str) -> bool:
    n = len(seq)
    return any(tuple(words[i: i + n]) == seq for i in range(len(words) - n + 1))


def _create(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    first = words[0]
    i = skip(tokens, 1, "OR", "REPLACE", "TEMPORARY", "MATERIALIZED", "LIVE", "WINDOW", "IF", "NOT", "EXISTS")
    kind_word = tokens[i].text.upper() if i < len(tokens) else ""
    temporary = "TEMPORARY" in words[:4]
    if kind_word in ACCESS_OBJECTS or kind_word not in (*_CREATE_KINDS, "INDEX"):
        access.kind = f"{first} {kind_word}".strip()
        access.need("ACCESS MANAGEMENT" if kind_word in ACCESS_OBJECTS else "UNKNOWN STATEMENT", None, None,
                    access.kind)
        return
    if kind_word == "INDEX":  # CREATE INDEX i ON t: an ALTER of t
        access.kind = "ALTER"
        on = words.index("ON") if "ON" in words else -1
        _target(access, tokens, [t.text.upper() for t in tokens].index("ON") + 1 if on >= 0 else len(tokens),
                current, "ALTER")
        return
    access.kind = "CREATE TEMPORARY TABLE" if temporary else _CREATE_KINDS[kind_word]
    j = skip(tokens, i + 1, "IF", "NOT", "EXISTS")
    if temporary:
        access.need("CREATE TEMPORARY TABLE", None, None)
    else:
        database, name, _ = name_at(tokens, j)
        target = (None, name) if kind_word == "DATABASE" else (database or current, name)
        access.need(access.kind, target[0] if kind_word != "DATABASE" else name, None if kind_word == "DATABASE"
                    else target[1])
        if "REPLACE" in words[:3]:
            access.need(f"DROP {kind_word}", target[0] if kind_word != "DATABASE" else name, target[1])
    if first == "ATTACH" and any(t.kind == "word" and t.text.upper() == "FROM" for t in tokens[j: j + 4]):
        access.need("FILE", None, None, "ATTACH … FROM a path")
    upper = [t.text.upper() for t in tokens]
    _as_table(access, tokens, j, current)
    if kind_word == "DICTIONARY":
        _dictionary_source(access, tokens, current)
    if kind_word == "VIEW" and "TO" in upper:  # a materialized view writes into its TO table
        _target(access, tokens, upper.index("TO") + 1, current, "INSERT")


def _as_table(access: Access, tokens: list[Token], start: int, current: str) -> None:
    """``CREATE TABLE t AS other``: the structure of ``other`` is read (a path in the default database too)."""
    for i in range(start, len(tokens) - 1):
        if tokens[i].kind == "word" and tokens[i].text.upper() == "AS":
            database, name, end = name_at(tokens, i + 1)
            if name and name.upper() not in ("SELECT", "WITH") and (end >= len(tokens) or tokens[end].text != "("):
                access.need("SELECT", database or current, name)
            return


def _dictionary_source(access: Access, tokens: list[Token], current: str) -> None:
    """A ``CLICKHOUSE`` source: another server (``host``, ``port``, ``user`` …) is ``REMOTE``; a local one reads
    its ``table`` (in ``db``), which needs SELECT."""
    keys: dict[str, str] = {}
    for key, value in itertools.pairwise(tokens):
        if key.kind == "word" and value.kind in ("string", "number"):
            keys[key.text.lower()] = value.text
    if {"host", "port", "user", "password", "secure"} & set(keys):
        access.need("REMOTE", None, None, "a CLICKHOUSE dictionary source on another server")
    elif {"query", "where", "invalidate_query"} & set(keys):  # SQL the dictionary runs later, unchecked here
        access.problem = "a CLICKHOUSE dictionary source with query, where or invalidate_query"
    elif "table" in keys:
        for database in {keys.get("db") or current, keys.get("db") or OVERLAY_DATABASE}:
            access.need("SELECT", database, keys["table"])


def _rename(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    exchange = words[0] == "EXCHANGE"
    access.kind = "EXCHANGE" if exchange else "RENAME"
    kind_word = words[1] if len(words) > 1 else ""
    i = 2 if kind_word in ("TABLE", "TABLES", "DICTIONARY", "DICTIONARIES", "DATABASE") else 1
    while i < len(tokens):
        db_a, a, i = name_at(tokens, i)
        i = skip(tokens, i, "TO", "AND")
        db_b, b, i = name_at(tokens, i)
        if not a or not b:
            access.problem = "the names of the RENAME/EXCHANGE could not be read"
            return
        if kind_word == "DATABASE":
            access.need("DROP DATABASE", a, None)
            access.need("CREATE DATABASE", b, None)
        else:
            for src, dst in ((db_a or current, a), (db_b or current, b)), ((db_b or current, b), (db_a or current, a)):
                access.need("SELECT", *src)
                access.need("DROP TABLE", *src)
                access.need("CREATE TABLE", *dst)
                access.need("INSERT", *dst)
                if not exchange:
                    break
        if i < len(tokens) and tokens[i].text == ",":
            i += 1
        else:
            break


def _drop(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    i = skip(tokens, 1, "TEMPORARY")
    kind_word = tokens[i].text.upper() if i < len(tokens) else ""
    if kind_word in ACCESS_OBJECTS:
        access.kind = f"{words[0]} {kind_word}"
        access.need("ACCESS MANAGEMENT", None, None, access.kind)
        return
    if words[0] == "TRUNCATE":
        access.kind = "TRUNCATE"
        i = skip(tokens, 1, "TEMPORARY", "TABLE", "IF", "EXISTS")
        _target(access, tokens, i, current, "TRUNCATE")
        return
    kind = {"TABLE": "TABLE", "VIEW": "VIEW", "DICTIONARY": "DICTIONARY", "DATABASE": "DATABASE",
            "FUNCTION": "FUNCTION"}.get(kind_word)
    if kind is None:
        access.kind, access.problem = f"{words[0]} {kind_word}", f"{words[0]} {kind_word} is not a known statement"
        return
    access.kind = f"DROP {kind}"
    j = skip(tokens, i + 1, "IF", "EMPTY", "EXISTS")
    if "TEMPORARY" in words[:2]:
        access.need("CREATE TEMPORARY TABLE", None, None)
    elif kind == "DATABASE":
        access.need("DROP DATABASE", name_at(tokens, j)[1], None)
    else:
        _target(access, tokens, j, current, f"DROP {kind}")


def _system(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    kind = _SYSTEM.get(tuple(words[1:3]))
    access.kind = kind or "SYSTEM " + " ".join(words[1:3])
    access.need(kind or "SYSTEM OTHER", None, None, access.kind)


def _kill(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    access.kind = "KILL " + (words[1] if len(words) > 1 else "")
    access.need("KILL QUERY" if access.kind == "KILL QUERY" else "ALTER", None, None, access.kind)


def _show(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    what = " ".join(words[1:3])
    access.kind = "SHOW"
    if set(words[1:3]) & ACCESS_OBJECTS:
        access.kind = f"SHOW {what}"
        access.need("ACCESS MANAGEMENT", None, None, access.kind)
        return
    upper = [t.text.upper() for t in tokens]
    if words[1:2] == ["CREATE"]:  # SHOW CREATE [TABLE|VIEW|DICTIONARY] name: the object's own definition
        _named_object(access, tokens, 2, current)
        return
    where = next((i + 1 for i, w in enumerate(upper) if w in ("FROM", "IN")), None)
    if words[1:2] and words[1] in ("COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS", "EXTENDED", "FULL") \
            and where is not None:  # SHOW COLUMNS FROM t [FROM db]: t's structure
        _named_object(access, tokens, where, current)
        return
    database = tokens[where].text if where is not None and where < len(tokens) else current
    access.need("SHOW TABLES", database, None, f"SHOW … {database}")


def _named_object(access: Access, tokens: list[Token], start: int, current: str) -> None:
    """The table, view or dictionary a SHOW or EXISTS names (in the default database it may be a path)."""
    i = skip(tokens, start, "TEMPORARY", "TABLE", "VIEW", "DICTIONARY", "DATABASE")
    database, name, end = name_at(tokens, i)
    if end < len(tokens) and tokens[end].kind == "word" and tokens[end].text.upper() in ("FROM", "IN"):
        database = name_at(tokens, end + 1)[1] or database
    if "DATABASE" in word_list(tokens[start:i]):
        access.need("SHOW DATABASES", name, None)
    elif name:
        access.need("SHOW COLUMNS", database or current, name)


def _alter(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    if len(words) > 1 and words[1] in ACCESS_OBJECTS:
        access.kind = f"ALTER {words[1]}"
        access.need("ACCESS MANAGEMENT", None, None, access.kind)
        return
    access.kind = "ALTER"
    _target(access, tokens, skip(tokens, 1, "TABLE", "TEMPORARY"), current, "ALTER")
    if _has(words, "FETCH", "PARTITION") or _has(words, "FETCH", "PART"):  # from another replica's keeper
        access.need("REMOTE", None, None, "ALTER … FETCH from another replica")


def _simple(kind: str, privilege: str, noise: tuple[str, ...]) -> Callable[[Access, list[Token], str], None]:
    def handle(access: Access, tokens: list[Token], current: str) -> None:
        access.kind = kind
        _target(access, tokens, skip(tokens, 1, *noise), current, privilege)
    return handle


def _global(kind: str, privilege: str | None) -> Callable[[Access, list[Token], str], None]:
    def handle(access: Access, tokens: list[Token], current: str) -> None:
        access.kind = kind
        if privilege is not None:
            access.need(privilege, None, None, kind)
    return handle


def _exists(access: Access, tokens: list[Token], current: str) -> None:
    access.kind = "EXISTS"
    _named_object(access, tokens, 1, current)


def _use(access: Access, tokens: list[Token], current: str) -> None:
    access.kind = "USE"
    access.need("SHOW DATABASES", name_at(tokens, 1)[1], None)


def _set(access: Access, tokens: list[Token], current: str) -> None:
    words = word_list(tokens)
    if len(words) > 1 and words[1] in ("ROLE", "DEFAULT"):
        access.kind = f"SET {words[1]}"
        access.need("ACCESS MANAGEMENT", None, None, access.kind)
        return
    access.kind = "SET"
    access.settings += setting_pairs(tokens, 1)


_HANDLERS: dict[str, Callable[[Access, list[Token], str], None]] = {
    "CREATE": _create, "ATTACH": _create, "REPLACE": _create, "ALTER": _alter, "DROP": _drop, "DETACH": _drop,
    "TRUNCATE": _drop, "RENAME": _rename, "EXCHANGE": _rename, "SYSTEM": _system, "KILL": _kill, "SHOW": _show,
    "USE": _use, "SET": _set,
    "OPTIMIZE": _simple("OPTIMIZE", "OPTIMIZE", ("TABLE",)), "UNDROP": _simple("UNDROP", "CREATE TABLE", ("TABLE",)),
    "DELETE": _simple("DELETE", "ALTER", ("FROM",)), "UPDATE": _simple("UPDATE", "ALTER", ()),
    "CHECK": _simple("CHECK", "SHOW TABLES", ("TABLE",)), "EXISTS": _exists,
    "DESCRIBE": _global("DESCRIBE", None), "DESC": _global("DESCRIBE", None),
    "GRANT": _global("GRANT", "ACCESS MANAGEMENT"), "REVOKE": _global("REVOKE", "ACCESS MANAGEMENT"),
    "MOVE": _global("MOVE", "ACCESS MANAGEMENT"), "EXECUTE": _global("EXECUTE AS", "ACCESS MANAGEMENT"),
    "BACKUP": _global("BACKUP", "BACKUP"), "RESTORE": _global("RESTORE", "BACKUP"),
    "BEGIN": _global("TRANSACTION", None), "COMMIT": _global("TRANSACTION", None),
    "ROLLBACK": _global("TRANSACTION", None), "START": _global("TRANSACTION", None),
}


def _insert(access: Access, tokens: list[Token], ast: str, current: str) -> None:
    access.kind = "INSERT"
    lines = [line.strip() for line in ast.splitlines()[1:] if line.startswith(" ") and not line.startswith("  ")]
    names = [line[len("Identifier "):] for line in lines if line.startswith("Identifier ")]
    if names:
        access.need("INSERT", names[0] if len(names) > 1 else current, names[-1])
    elif not any(line.startswith("Function ") for line in lines):
        access.problem = "the INSERT's target could not be read"
    if _has(word_list(tokens), "FROM", "INFILE"):
        access.need("FILE", None, None, "FROM INFILE")


def analyse(ast: str, canonical: str, current: str) -> Access:
    """The :class:`Access` of one statement: its ``EXPLAIN AST`` and ``formatQuerySingleLine`` texts."""
    tokens = tokenize(canonical, keep_case=True)
    access = Access()
    start = next((i for i, t in enumerate(tokens) if t.text != "("), len(tokens))
    words = word_list(tokens[start:])
    table_privilege = "SELECT"
    if words[:1] == ["EXPLAIN"]:
        inner = next((i for i, t in enumerate(tokens) if i > start and t.kind == "word"
                      and t.text.upper() in _STARTS and t.text.upper() != "EXPLAIN"), len(tokens))
        sub = analyse_tokens(tokens[inner:], ast, current)
        access.needs, access.settings, access.problem = sub.needs, sub.settings, sub.problem
        access.kind = "EXPLAIN"
        table_privilege = "SHOW COLUMNS" if sub.kind == "DESCRIBE" else "SELECT"
    else:
        access = analyse_tokens(tokens[start:], ast, current)
        if access.kind in ("DESCRIBE", "EXISTS"):
            table_privilege = "SHOW COLUMNS"
    if access.kind != "SET":
        access.settings += settings_clauses(tokens)
    tree(access, ast, tokens, current, table_privilege)
    return access


def analyse_tokens(tokens: list[Token], ast: str, current: str) -> Access:
    """What one statement (from its first word) accesses: its class, the privileges it needs, its settings, or why it
    cannot be read."""
    access = Access()
    words = word_list(tokens)
    first = words[0] if words else ""
    if first in ("SELECT", "WITH"):
        access.kind = "SELECT"
        if _has(words, "INTO", "OUTFILE"):
            access.need("FILE", None, None, "INTO OUTFILE")
    elif first == "INSERT":
        _insert(access, tokens, ast, current)
    elif first in _HANDLERS:
        _HANDLERS[first](access, tokens, current)
        if access.kind in ("CREATE TABLE", "ALTER", "CREATE DATABASE") and _storage_on_disk(tokens):
            access.need("FILE", None, None, "a disk or storage policy of its own")
    else:
        access.kind, access.problem = first or "(empty)", f"the statement {first[:40]!r} is not known to this server"
    return access


def _storage_on_disk(tokens: list[Token]) -> bool:
    return any(t.kind in ("word", "ident") and t.text.lower() in ("disk", "storage_policy") and n.text == "="
               for t, n in itertools.pairwise(tokens))
