"""What a statement may do: nothing outside the database, for anyone; only reading, for ``readonly`` users.

Two readings of each statement, and a statement passes only if both pass:

1. :func:`check_statement` reads the tokens (:mod:`.sqltokens`): statements that reach the host or the network
   (``SYSTEM``, ``KILL``, ``BACKUP``/``RESTORE``, ``INTO OUTFILE``, ``FROM INFILE``, ``INSERT INTO FUNCTION``,
   ``ATTACH ... FROM``, ``ALTER ... FETCH``), access management, every call of a function that reaches outside
   (``file``, ``url``, ``s3``, ``remote`` …, :data:`OUTSIDE_FUNCTIONS`), ``ENGINE =`` outside an allow-list,
   dictionary sources other than a local ``CLICKHOUSE``/``NULL``, and settings fixed by the profile
   (paths, ``disk``, ``storage_policy``, source credentials …). A ``readonly`` user may only SELECT, SHOW,
   DESCRIBE, EXISTS, EXPLAIN and USE, and may change no setting (ClickHouse's ``readonly=1``).
2. :func:`check_ast` reads chDB's own parse (``EXPLAIN AST``, no execution): no function name (engines
   included) may reach outside, and the table functions, dictionary sources and ``INSERT INTO FUNCTION``
   targets it finds must be on the allow-lists (engines are allow-listed by the token reading: in the AST an
   engine and a ``PARTITION BY`` expression look alike).

Codes are the ones a ClickHouse server with the equivalent ``users.xml`` (``deploy/clickhouse/users.xml``: no
source grants, no SYSTEM/KILL/access management, ``readonly`` constrained) answers: 497 ``ACCESS_DENIED``
(what reaches outside, access management), 164 ``READONLY`` (a readonly user writing or setting), 452
``SETTING_CONSTRAINT_VIOLATION`` (a setting the profile fixes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .protocol import ClickHouseError
from .sqltokens import Token, split_statements, tokenize

__all__ = ["OUTSIDE_FUNCTIONS", "TABLE_ENGINES", "TABLE_FUNCTIONS", "Refusal", "check_ast", "check_settings",
           "check_statement", "is_outside_function"]

OUTSIDE_FUNCTIONS = frozenset({
    "file", "filecluster", "url", "urlcluster", "gcs", "oss", "cosn", "remote", "remotesecure", "cluster",
    "clusterallreplicas", "jdbc", "odbc", "sqlite", "redis", "executable", "executablepool", "input", "hive",
    "ytsaurus", "disk", "kafka", "rabbitmq", "nats", "filelog", "embeddedrocksdb", "keepermap", "distributed",
    "zookeeper", "hdfs", "s3", "mysql", "postgresql", "mongodb", "azureblobstorage", "dictionary_source",
})
_OUTSIDE_PREFIXES = ("s3", "hdfs", "azure", "iceberg", "deltalake", "hudi", "paimon", "datalake", "mysql",
                     "postgres", "mongo", "arrowflight", "prometheus", "materializedpostgres", "materializedmysql")
TABLE_FUNCTIONS = frozenset({
    "numbers", "numbers_mt", "zeros", "zeros_mt", "generaterandom", "generate_series", "generateseries", "values",
    "null", "merge", "view", "viewifpermitted", "viewexplain", "format", "dictionary", "loop", "mergetreeindex",
    "mergetreeprojection", "fuzzjson", "fuzzquery"})
TABLE_ENGINES = frozenset({"memory", "log", "tinylog", "stripelog", "null", "set", "join", "buffer", "merge",
                           "generaterandom", "dictionary", "view", "materializedview"})
DATABASE_ENGINES = frozenset({"atomic", "ordinary", "memory", "lazy"})
DICTIONARY_SOURCES = frozenset({"clickhouse", "null"})
_REMOTE_KEYS = frozenset({"host", "port", "user", "password", "secure", "quota_key", "name"})
# Settings a client may not change (ClickHouse ``<constraints>`` ``<const/>`` in the profile): 452.
FIXED_SETTINGS = frozenset({
    "allow_ddl", "allow_introspection_functions", "user_files_path", "format_schema",
    "format_schema_path", "format_template_resultset", "format_template_row", "format_template_resultset_format",
    "format_template_row_format", "disk", "storage_policy",
    "max_concurrent_queries_for_user", "enable_url_encoding", "allow_experimental_database_materialized_postgresql",
    "allow_experimental_database_materialized_mysql", "function_sleep_max_microseconds_per_block"})
_FIXED_PREFIXES = ("s3_", "s3queue_", "hdfs_", "azure_", "engine_file_", "engine_url_", "storage_file_",
                   "remote_", "mysql_", "postgresql_", "odbc_", "external_storage_", "http_", "backup_",
                   "restore_", "filesystem_cache_", "iceberg_", "delta_lake_", "hudi_", "kafka_", "rabbitmq_",
                   "nats_", "distributed_", "max_remote_", "allow_experimental_database_")
_READ_STATEMENTS = frozenset({"select", "with", "show", "describe", "desc", "exists", "explain", "use"})
_ACCESS_OBJECTS = frozenset({"user", "users", "role", "roles", "quota", "quotas", "policy", "row", "profile",
                             "settings", "masking", "named"})
_NAME_POSITIONS = frozenset({".", "into"})  # ``db.file(`` and ``INSERT INTO file (a, b)`` name tables


@dataclass(frozen=True)
class Refusal:
    """Why a statement is refused: ClickHouse's code and name, the log code (``CHS00x``) and the message."""

    code: int
    name: str
    log_code: str
    message: str

    def error(self) -> ClickHouseError:
        return ClickHouseError.make(self.code, self.name, self.message)


def _outside(user: str, what: str) -> Refusal:
    return Refusal(497, "ACCESS_DENIED", "CHS002", f"{user}: Not enough privileges: {what} reaches outside the "
                   "database and is refused for every user of this server")


def _readonly(user: str, what: str = "") -> Refusal:
    text = f"Cannot modify '{what}' setting in readonly mode" if what else f"{user}: Cannot execute query in " \
        "readonly mode"
    return Refusal(164, "READONLY", "CHS003", text)


def _fixed(user: str, name: str) -> Refusal:
    return Refusal(452, "SETTING_CONSTRAINT_VIOLATION", "CHS004", f"{user}: Setting {name} should not be changed "
                   "(it is fixed by the profile: it would lift a limit or reach outside the database)")


def is_outside_function(name: str) -> bool:
    name = name.lower()
    return name in OUTSIDE_FUNCTIONS or name.startswith(_OUTSIDE_PREFIXES)


def _fixed_setting(name: str) -> bool:
    name = name.lower()
    return name in FIXED_SETTINGS or name.startswith(_FIXED_PREFIXES)


def check_settings(names: Iterable[str], user: str, readonly: bool) -> Refusal | None:
    """Settings a request changes (URL parameters, ``SET``, ``SETTINGS``): none for readonly, no fixed one."""
    for name in names:
        if readonly:
            return _readonly(user, name)
        if name.lower() == "readonly":
            continue  # a default user may make itself read-only (ClickHouse then refuses to go back: 164)
        if _fixed_setting(name):
            return _fixed(user, name)
    return None


def _word(token: Token | None, *words: str) -> bool:
    return token is not None and token.kind == "word" and token.text in words


def _at(tokens: list[Token], i: int) -> Token | None:
    return tokens[i] if 0 <= i < len(tokens) else None


def _punct(token: Token | None, char: str) -> bool:
    return token is not None and token.kind == "punct" and token.text == char


def _setting_names(tokens: list[Token], start: int) -> list[str]:
    """The names of ``name = value, …`` from ``start`` (value expressions skipped, parentheses balanced)."""
    names: list[str] = []
    i, depth, expect_name = start, 0, True
    while i < len(tokens):
        token = tokens[i]
        if depth == 0 and expect_name:
            if token.kind not in ("word", "ident") or not _punct(_at(tokens, i + 1), "="):
                break
            names.append(token.text)
            expect_name, i = False, i + 2
            continue
        if token.kind == "punct" and token.text in "([":
            depth += 1
        elif token.kind == "punct" and token.text in ")]":
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and _punct(token, ","):
            expect_name = True
        elif depth == 0 and _word(token, "format", "settings"):
            break
        i += 1
    return names


def _balanced_end(tokens: list[Token], open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(tokens)):
        if _punct(tokens[i], "("):
            depth += 1
        elif _punct(tokens[i], ")"):
            depth -= 1
            if depth == 0:
                return i
    return len(tokens)


def _statement_kind(tokens: list[Token], names: list[int]) -> tuple[str, str]:
    words = [tokens[i].text for i in names[:3] if tokens[i].kind == "word"]
    first = next((t.text for t in tokens if not _punct(t, "(")), "")
    return first, " ".join(words[1:3])


def _check_keywords(tokens: list[Token], names: list[int], user: str, first: str, second: str) -> Refusal | None:
    if first in ("system", "kill", "backup", "restore"):
        return _outside(user, f"{first.upper()} ...")
    if first in ("grant", "revoke") or (first in ("create", "alter", "drop", "move")
                                        and second.split(" ")[0] in _ACCESS_OBJECTS) or \
            (first == "set" and second.split(" ")[0] in ("role", "default")) or (first == "execute"):
        return Refusal(497, "ACCESS_DENIED", "CHS006", f"{user}: Not enough privileges: access management "
                       f"({first.upper()} {second.upper()}) is refused; users and profiles live in the users file")
    for i in names:
        token, prev = tokens[i], _at(tokens, i - 1)
        if _word(token, "outfile") and _word(prev, "into"):
            return _outside(user, "INTO OUTFILE")
        if _word(token, "infile") and _word(prev, "from"):
            return _outside(user, "FROM INFILE")
        if _word(token, "function") and (_word(prev, "into") or (_word(prev, "table") and _word(
                _at(tokens, i - 2), "into"))) and first in ("insert", "explain"):
            return _outside(user, "INSERT INTO FUNCTION")
        if _word(token, "from") and first == "attach":
            return _outside(user, "ATTACH ... FROM")
        if _word(token, "fetch") and first == "alter":
            return _outside(user, "ALTER ... FETCH")
    return None


def _check_calls(tokens: list[Token], names: list[int], user: str, first: str) -> Refusal | None:
    creates = first in ("create", "attach", "replace", "insert", "explain")
    for i in names:
        token = tokens[i]
        if not _punct(_at(tokens, i + 1), "("):
            continue
        prev = _at(tokens, i - 1)
        names_table = (prev is not None and prev.text in _NAME_POSITIONS and prev.kind in ("word", "punct")) or (
            creates and _word(prev, "table", "dictionary", "exists"))
        if is_outside_function(token.text) and not names_table:
            return _outside(user, f"the function {token.text}()")
    return None


def _check_engines_and_sources(tokens: list[Token], names: list[int], user: str, first: str, second: str,
                               ) -> Refusal | None:
    database = second.split(" ")[0] == "database" or (second == "or replace" and any(
        _word(t, "database") for t in tokens[:6]))
    for i in names:
        token = tokens[i]
        if _word(token, "engine") and first in ("create", "attach", "replace", "alter", "explain"):
            j = i + 2 if _punct(_at(tokens, i + 1), "=") else i + 1
            engine = _at(tokens, j)
            if engine is None or engine.kind not in ("word", "ident"):
                continue
            allowed = DATABASE_ENGINES if database else TABLE_ENGINES
            if engine.text not in allowed and not (not database and engine.text.endswith("mergetree")):
                return _outside(user, f"the engine {engine.text}")
        if _word(token, "source") and _punct(_at(tokens, i + 1), "(") and first in ("create", "attach",
                                                                                    "replace", "explain"):
            kind = _at(tokens, i + 2)
            if kind is None or kind.text not in DICTIONARY_SOURCES:
                return _outside(user, f"the dictionary source {kind.text if kind else '?'}")
            end = _balanced_end(tokens, i + 1)
            if any(t.kind == "word" and t.text in _REMOTE_KEYS for t in tokens[i + 2: end]):
                return _outside(user, "a dictionary source on another server")
    return None


_VALUES = re.compile(r"\bvalues\b", re.I)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'")
_LITERAL_CHARS = re.compile(r"[0-9eE.,()\[\]+\-' \t\r\n]*")  # digits, signs, exponents, brackets, emptied strings


def _statements(sql: str) -> list[list[Token]]:
    """The statements' tokens; an ``INSERT … VALUES`` whose rows are only literals is read up to ``VALUES``
    (its rows hold no word, so nothing a rule looks at: a megabyte of rows costs one regular expression)."""
    rows = _STRING.sub("''", sql[values.end():]) if len(sql) > 4096 and (values := _VALUES.search(sql)) else None
    if rows is not None and values is not None and _LITERAL_CHARS.fullmatch(rows) and "--" not in rows:
        # no letter, quote, comment or heredoc outside the strings: the strings end where ClickHouse ends them
        head = tokenize(sql[: values.end()])
        if head and head[-1] == Token("word", "values", values.start()) and _word(head[0], "insert"):
            return [head]
    return split_statements(tokenize(sql))


def check_statement(sql: str, user: str, readonly: bool) -> Refusal | None:
    """The token reading of ``sql`` (every statement in it): a :class:`Refusal` or None."""
    for tokens in _statements(sql):
        names = [i for i, t in enumerate(tokens) if t.kind == "word" or t.kind == "ident"]  # VALUES data has few
        first, second = _statement_kind(tokens, names)
        refusal = _check_keywords(tokens, names, user, first, second) or \
            _check_calls(tokens, names, user, first) or _check_engines_and_sources(tokens, names, user, first, second)
        if refusal is not None:
            return refusal
        if first == "set":
            refusal = check_settings(_setting_names(tokens, 1), user, readonly)
            if refusal is not None or readonly:
                return refusal or _readonly(user)
        if readonly and first not in _READ_STATEMENTS:
            return _readonly(user)
        for i in names:
            if _word(tokens[i], "settings", "setting"):
                refusal = check_settings(_setting_names(tokens, i + 1), user, readonly)
                if refusal is not None:
                    return refusal
    return None


_AST_LINE = re.compile(r"^( *)(\S.*?)\s*$")
_AST_FUNCTION = re.compile(r"^(Function|FunctionWithKeyValueArguments)\s+(\S+)")


def check_ast(explain: str, user: str) -> Refusal | None:
    """chDB's ``EXPLAIN AST`` of a statement: functions, table functions, engines, dictionary sources."""
    parent: dict[int, str] = {}  # indentation -> the node text at that depth, for the current branch
    for line in explain.splitlines():
        match = _AST_LINE.match(line.replace("\\t", "").strip("\"'\t"))
        if match is None:
            continue
        depth, node = len(match.group(1)), match.group(2)
        parent[depth] = node
        up = parent.get(depth - 1, "")
        if depth == 0 and node.startswith(("SYSTEM query", "KillQueryQuery", "BackupQuery")):
            return _outside(user, node.split(" ")[0])
        function = _AST_FUNCTION.match(node)
        if function is None:
            continue
        kind, name = function.group(1), function.group(2).lower()
        if is_outside_function(name):
            return _outside(user, f"the function {name}()")
        if up.startswith("TableExpression") and name not in TABLE_FUNCTIONS:
            return _outside(user, f"the table function {name}()")
        if kind == "FunctionWithKeyValueArguments" and up.startswith("Dictionary definition") \
                and name not in DICTIONARY_SOURCES:
            return _outside(user, f"the dictionary source {name}")
        if up.startswith("InsertQuery"):
            return _outside(user, f"INSERT INTO FUNCTION {name}")
    return None
