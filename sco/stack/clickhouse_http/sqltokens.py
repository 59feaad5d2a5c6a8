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
from dataclasses import dataclass
from typing import Literal

__all__ = ["Token", "split_statements", "tokenize"]

Kind = Literal["word", "ident", "string", "number", "punct"]


@dataclass(frozen=True)
class Token:
    kind: Kind  # word: bare identifier or keyword; ident: quoted identifier
    text: str  # words and quoted identifiers lower-cased (ClickHouse compares function names so), strings decoded
    at: int


_SIMPLE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<line>(?:--|\#)[^\n]*)
  | (?P<num>\d[\w.]*(?:[eE][+-]\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
""", re.X)
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


def tokenize(sql: str) -> list[Token]:
    """The tokens of ``sql`` without whitespace and comments."""
    tokens: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in _QUOTES:
            close, kind = _QUOTES[char]
            text, end = _quoted(sql, i, close)
            tokens.append(Token("string" if kind == "string" else "ident",
                                text if kind == "string" else text.lower(), i))
            i = end
            continue
        if sql.startswith("/*", i):
            i = _block_comment_end(sql, i)
            continue
        if char == "$" and (heredoc := _HEREDOC.match(sql, i)):
            end = sql.find(heredoc.group(0), heredoc.end())
            end = n if end < 0 else end
            tokens.append(Token("string", sql[heredoc.end(): end], i))
            i = end + len(heredoc.group(0))
            continue
        match = _SIMPLE.match(sql, i)
        if match is not None:
            group = match.lastgroup
            if group in ("word", "num"):
                tokens.append(Token("word" if group == "word" else "number", match.group().lower(), i))
            i = match.end()
            continue
        if _is_space(char):
            i += 1
            continue
        if ord(char) > 127:  # a letter ClickHouse takes into a bare word: keep the word whole
            end = i
            while end < n and ((sql[end].isascii() and (sql[end].isalnum() or sql[end] in "_$"))
                               or (not sql[end].isascii() and not _is_space(sql[end]))):
                end += 1
            tokens.append(Token("word", sql[i:end].lower(), i))
            i = end
            continue
        tokens.append(Token("punct", char, i))
        i += 1
    return tokens


def split_statements(tokens: list[Token]) -> list[list[Token]]:
    """Statements separated by ``;`` (empty ones dropped)."""
    statements: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "punct" and token.text == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    return [s for s in statements if s]
