"""A ClickHouse SQL tokenizer for the statement guard: what the server's lexer sees, not what a substring sees.

It follows ClickHouse's lexer where a difference could hide a word from the guard: comments (``--``, ``#``,
nested ``/* */``), strings (``'…'`` with backslash escapes and doubled quotes, ``‘…’``, heredocs
``$tag$…$tag$``), quoted identifiers (```…```, ``"…"``, ``“…”``, escapes decoded: ```fil\\x65``` is ``file``),
and Unicode whitespace (ClickHouse skips U+00A0, U+200B … between tokens: so does this). Words are
case-folded; an unterminated string or comment runs to the end (the engine refuses the statement anyway).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Literal, NamedTuple

__all__ = ["Token", "split_statements", "tokenize"]

Kind = Literal["word", "ident", "string", "number", "punct"]


class Token(NamedTuple):
    kind: Kind  # word: bare identifier or keyword; ident: quoted identifier
    text: str  # words and quoted identifiers lower-cased unless asked otherwise; strings raw
    at: int


_MASTER = re.compile(r"""
    (?P<ws>\s+)
  | (?P<line>(?:--|\#)[^\n]*)
  | (?P<block>/\*)
  | (?P<string>'[^'\\]*'(?!'))
  | (?P<quoted>['`"\u2018\u201c])
  | (?P<heredoc>\$[A-Za-z0-9_]*\$)
  | (?P<num>\d[\w.]*(?:[eE][+-]\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>[(),;=.*\[\]])
  | (?P<other>.)
""", re.X | re.S)
_QUOTES = {"'": ("'", "string"), "\u2018": ("\u2019", "string"), "`": ("`", "ident"), '"': ('"', "ident"),
           "\u201c": ("\u201d", "ident")}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "a": "\a", "v": "\v", "e": "\x1b"}
_HEREDOC = re.compile(r"\$([A-Za-z0-9_]*)\$")


def _is_space(char: str) -> bool:
    """Whitespace as ClickHouse skips it, plus every other non-ASCII character that is no letter or digit."""
    return char.isspace() or (ord(char) > 127 and unicodedata.category(char)[0] not in "LN")


def _quoted(sql: str, start: int, close: str) -> tuple[str, int]:
    """Decode a quoted string or identifier starting at ``start`` (the opening quote); return (text, end)."""
    out: list[str] = []
    i, n = start + 1, len(sql)
    while i < n:
        char = sql[i]
        if char == "\\" and i + 1 < n:
            nxt = sql[i + 1]
            if nxt == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", sql[i + 2: i + 4]):
                out.append(chr(int(sql[i + 2: i + 4], 16)))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if char == close:
            if close == sql[start] and sql[i + 1: i + 2] == close:  # doubled quote
                out.append(close)
                i += 2
                continue
            return "".join(out), i + 1
        out.append(char)
        i += 1
    return "".join(out), n


def _block_comment_end(sql: str, start: int) -> int:
    depth, i, n = 0, start, len(sql)
    while i < n:
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _plain(sql: str, fold: Callable[[str], str]) -> list[Token] | None:
    """The fast path, one C-level scan: for text with no comment, heredoc, non-ASCII or quote to decode."""
    tokens: list[Token] = []
    append = tokens.append
    for m in _MASTER.finditer(sql):
        group = m.lastgroup
        if group == "word" or group == "num":
            append(Token("word" if group == "word" else "number", fold(m.group()), m.start()))
        elif group == "punct":
            append(Token("punct", m.group(), m.start()))
        elif group == "string":
            append(Token("string", m.group()[1:-1], m.start()))
        elif group != "ws" and group != "line" and (group != "other" or not m.group().isascii()):
            return None  # a quote, comment or heredoc to follow by hand
        elif group == "other":
            append(Token("punct", m.group(), m.start()))
    return tokens


def _same(text: str) -> str:
    return text


def tokenize(sql: str, keep_case: bool = False) -> list[Token]:
    """The tokens of ``sql`` without whitespace and comments (words and identifiers lower-cased unless
    ``keep_case``: table and column names are case-sensitive in ClickHouse)."""
    fold = _same if keep_case else str.lower
    fast = _plain(sql, fold) if "/*" not in sql and "$" not in sql else None
    if fast is not None:
        return fast
    tokens: list[Token] = []
    append = tokens.append
    i, n = 0, len(sql)
    match = _MASTER.match
    while i < n:
        m = match(sql, i)
        assert m is not None  # the last alternative matches any character
        group, text, end = m.lastgroup, m.group(), m.end()
        if group == "word" or group == "num":
            append(Token("word" if group == "word" else "number", fold(text), i))
        elif group == "punct":
            append(Token("punct", text, i))
        elif group == "string":
            append(Token("string", text[1:-1], i))
        elif group == "quoted":
            close, kind = _QUOTES[text]
            value, end = _quoted(sql, i, close)
            append(Token("string" if kind == "string" else "ident", value if kind == "string" else fold(value), i))
        elif group == "block":
            end = _block_comment_end(sql, i)
        elif group == "heredoc":
            close_at = sql.find(text, end)
            close_at = n if close_at < 0 else close_at
            append(Token("string", sql[end: close_at], i))
            end = close_at + len(text)
        elif group == "other":
            if _is_space(text):
                pass
            elif ord(text) > 127:  # a letter ClickHouse takes into a bare word: keep the word whole
                while end < n and ((sql[end].isascii() and (sql[end].isalnum() or sql[end] in "_$"))
                                   or (not sql[end].isascii() and not _is_space(sql[end]))):
                    end += 1
                append(Token("word", fold(sql[i:end]), i))
            else:
                append(Token("punct", text, i))
        i = end
    return tokens


def split_statements(tokens: list[Token]) -> list[list[Token]]:
    """Statements separated by ``;`` (empty ones dropped)."""
    cuts = [i for i, t in enumerate(tokens) if t.text == ";" and t.kind == "punct"]
    bounds = zip([-1, *cuts], [*cuts, len(tokens)], strict=True)
    return [tokens[a + 1: b] for a, b in bounds if b > a + 1]
