"""The rows of an ``INSERT … VALUES``: what the statement's parse does not show, checked on their own.

chDB parses an ``INSERT`` only up to ``VALUES`` (``FORMAT Values``); its rows are data for the Values format,
which *evaluates expressions* (``input_format_values_interpret_expressions``): ``VALUES (file('/etc/x'))``
would read a file though the statement's tree holds no function. So the gate reads the rows itself: rows of
nothing but numbers, strings, signs and brackets (no letter, comment or heredoc outside the strings) cannot
name a table or call a function and pass as they are; any other rows are parsed by chDB as the expression
list of a ``SELECT`` (:func:`rows_as_select`) and checked like one. The same rule lets a long insert of
literals be parsed up to ``VALUES`` only (:func:`insert_head`; chDB parses no more than ``max_query_size``).
"""

from __future__ import annotations

import re

from .sqltokens import Token, tokenize

__all__ = ["insert_head", "literal_rows", "rows_as_select", "values_rows"]

_VALUES = re.compile(r"\bvalues\b", re.I)
_INSERT = re.compile(r"^\s*insert\b", re.I)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'")
_LITERAL_CHARS = re.compile(r"[0-9eE.,()\[\]+\-' \t\r\n]*")  # digits, signs, exponents, brackets, emptied strings


def values_rows(sql: str) -> tuple[int, str] | None:
    """(offset, rows) after the ``VALUES`` keyword of an ``INSERT`` (not one inside a string or comment)."""
    if _INSERT.match(sql) is None:
        return None
    for values in _VALUES.finditer(sql):
        tokens = tokenize(sql[: values.end()])
        if any(t.text == ";" or (t.kind == "word" and t.text in ("select", "with")) for t in tokens):
            return None  # INSERT … SELECT … FROM values(…): an ordinary statement
        if tokens and tokens[-1] == Token("word", "values", values.start()):
            return values.end(), sql[values.end():]
    return None


def literal_rows(rows: str) -> bool:
    """Whether ``rows`` hold literals only (a comment could hide a quote: none allowed)."""
    stripped = _STRING.sub("''", rows)
    return _LITERAL_CHARS.fullmatch(stripped) is not None and "--" not in stripped


def rows_as_select(rows: str) -> str:
    """The rows as a statement chDB's parser reads as expressions: ``SELECT (1, f(x)), (2, g(y))``."""
    return "SELECT " + rows.strip().rstrip(";")


def insert_head(sql: str) -> str | None:
    """``INSERT INTO t (a, b) VALUES`` of ``sql`` when its rows are literals only; else None."""
    found = values_rows(sql)
    if found is None or not literal_rows(found[1]):
        return None
    return sql[: found[0]]
