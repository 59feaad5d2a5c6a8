"""A long ``INSERT … VALUES`` whose rows are only literals: the statement the parser needs ends at ``VALUES``.

chDB parses at most ``max_query_size`` (256 KiB) of a statement; an ``INSERT`` with a megabyte of rows is
parsed there only up to ``VALUES`` and its rows are read as data. When the rows hold nothing but numbers,
strings, signs and brackets (no letter, comment or heredoc outside the strings; ``VALUES`` a word of the
statement, not of a string) they cannot name a table or call a function, so the head alone is what the access
decision needs; anything else is not shortened.
"""

from __future__ import annotations

import re

from .sqltokens import Token, tokenize

__all__ = ["insert_head"]

_VALUES = re.compile(r"\bvalues\b", re.I)
_INSERT = re.compile(r"^\s*insert\b", re.I)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'")
_LITERAL_CHARS = re.compile(r"[0-9eE.,()\[\]+\-' \t\r\n]*")  # digits, signs, exponents, brackets, emptied strings


def insert_head(sql: str) -> str | None:
    """``INSERT INTO t (a, b) VALUES`` of ``sql`` when its rows are literals only; else None."""
    values = _VALUES.search(sql)
    if values is None or _INSERT.match(sql) is None:
        return None
    head = sql[: values.end()]
    tokens = tokenize(head)
    if not tokens or tokens[-1] != Token("word", "values", values.start()) or any(t.text == ";" for t in tokens):
        return None  # the VALUES found sits inside a string, identifier or comment: not shortened
    rows = _STRING.sub("''", sql[values.end():])
    if _LITERAL_CHARS.fullmatch(rows) is None or "--" in rows:  # a comment could hide a quote
        return None
    return head
