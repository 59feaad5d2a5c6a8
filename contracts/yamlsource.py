"""Load YAML while remembering the line of every key, so findings can say ``file:line``.

Duplicate keys are refused (YAML would silently keep the last one). Every input is bounded, so a hostile
file costs milliseconds, never a hang, a memory blow-up or a ``RecursionError``: size (``MAX_FILE_BYTES``),
nesting depth (``MAX_DEPTH``), aliases (``MAX_ALIASES``) and the size of the document once aliases are
expanded (``MAX_NODES``). Errors are :class:`SourceError` with the file, line, a stable code and a one-line
reason, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import SourceError

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "SourceError",
    "SourceMap",
    "decode_source",
    "load_yaml",
    "read_source",
]

MAX_FILE_BYTES = 256 * 1024  # a contract is about 1 KiB
MAX_DEPTH = 32  # a contract nests three levels
MAX_ALIASES = 64
MAX_NODES = 10_000  # values in the document after aliases are expanded


@dataclass(frozen=True)
class SourceMap:
    """Where each value of a YAML document is: dotted path to line number."""

    file: str
    lines: dict[str, int]

    def line_of(self, path: str) -> int:
        """The line of ``path`` (dotted), or of its nearest parent that exists, or 1."""
        probe = path
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe.rsplit(".", 1)[0] if "." in probe else ""
        return 1


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses deep nesting and many aliases while composing (before any expansion)."""

    def __init__(self, text: str, file: str) -> None:
        super().__init__(text)
        self.file, self.depth, self.aliases = file, 0, 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise SourceError(self.file, line, f"more than {MAX_ALIASES} aliases (*name); a contract needs "
                                  "none: write the values out", code="SRC004")
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise SourceError(self.file, line, f"nesting deeper than {MAX_DEPTH} levels; a contract nests "
                                  "at most three: flatten the document", code="SRC003")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Walk:
    """Turns the node graph into Python values, counting every value so aliases cannot multiply them."""

    def __init__(self, loader: yaml.SafeLoader, file: str) -> None:
        self.loader, self.file, self.nodes = loader, file, 0
        self.lines: dict[str, int] = {}

    def _count(self, node: yaml.Node) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SourceError(self.file, node.start_mark.line + 1, f"the document expands to more than {MAX_NODES} "
                              "values (aliases of aliases?); write the contract out plainly", code="SRC005")

    def value(self, node: yaml.Node, prefix: str) -> Any:
        self._count(node)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                line = key_node.start_mark.line + 1
                if not isinstance(key_node, yaml.ScalarNode):
                    raise SourceError(self.file, line, "a key is a mapping or a list; keys are field names")
                key = self.loader.construct_object(key_node, deep=True)
                if not isinstance(key, str):
                    raise SourceError(self.file, line, f"key {key!r} is not a string")
                if key in out:
                    raise SourceError(self.file, line, f"duplicate key {key!r}")
                path = f"{prefix}.{key}" if prefix else key
                self.lines[path] = line
                out[key] = self.value(value_node, path)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                path = f"{prefix}.{index}"
                self.lines[path] = item.start_mark.line + 1
                items.append(self.value(item, path))
            return items
        return self.loader.construct_object(node, deep=True)


def load_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document and record the line of every value.

    Returns:
        ``(data, source_map)``.

    Raises:
        SourceError: the text is empty, too large, too deep, has too many aliases or expands too far, is not
            valid YAML, or has a duplicate or non-string key.
    """
    if len(text) > MAX_FILE_BYTES:
        raise SourceError(file, 1, f"{len(text)} characters, above the {MAX_FILE_BYTES}-byte limit for a "
                          "contract file; split it", code="SRC002")
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text, file)  # the reader refuses control characters here
        node = loader.get_single_node()
        if node is None:
            raise SourceError(file, 1, "the file is empty; a contract is a YAML mapping")
        walk = _Walk(loader, file)
        data = walk.value(node, "")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        reason = exc.problem or exc.context or "malformed YAML"
        raise SourceError(file, line, f"malformed YAML: {reason}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise SourceError(file, line, f"character #x{exc.character:04x} at line {line} is not allowed in YAML "
                          "text; remove it", code="SRC001") from None
    except yaml.YAMLError as exc:
        raise SourceError(file, 1, f"malformed YAML: {exc}") from None
    except RecursionError:  # the composer is bounded above; a backstop for anything deeper in PyYAML
        raise SourceError(file, 1, "nesting too deep; flatten the document", code="SRC003") from None
    finally:
        if loader is not None:
            loader.dispose()
    return data, SourceMap(file, walk.lines)


def decode_source(raw: bytes, file: str) -> str:
    """Decode a contract file's bytes as UTF-8 text.

    Raises:
        SourceError: ``SRC001`` with the line of the first invalid byte or NUL.
    """
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise SourceError(file, line, f"a NUL byte at line {line}: the file is binary, not YAML text; "
                          "save it as UTF-8 text", code="SRC001")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SourceError(file, line, f"byte 0x{raw[exc.start]:02x} at line {line} is not UTF-8; save the "
                          "file as UTF-8", code="SRC001") from None


def read_source(path: Path, root: Path, shown: str | None = None) -> str:
    """Read a contract file of the repository at ``root``, refusing what a contract file cannot be.

    Args:
        path: the file.
        root: the repository; the file's real path must lie inside it.
        shown: the name findings use for the file (default ``str(path)``).

    Raises:
        SourceError: ``SRC006`` a symlink that leaves the repository, ``SRC002`` too large, ``SRC001`` not
            UTF-8 text, or ``SCH001`` unreadable.
    """
    name = shown or str(path)
    try:
        real = path.resolve(strict=True)
        if not real.is_relative_to(root.resolve(strict=True)):
            raise SourceError(name, 1, "a symlink to a file outside the repository; contract files must live "
                              "in the repository: copy the file in or remove the link", code="SRC006")
        with real.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SourceError(name, 1, f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SourceError(name, 1, f"above the {MAX_FILE_BYTES}-byte limit for a contract file; split it",
                          code="SRC002")
    return decode_source(raw, name)
