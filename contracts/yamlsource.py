"""Load YAML while remembering the line of every key, so findings can say ``file:line``.

Duplicate keys are refused (YAML would silently keep the last one). Errors are :class:`SourceError` with
the file, line and a one-line reason, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import SourceError

__all__ = ["SourceError", "SourceMap", "load_yaml"]


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


def _walk(node: yaml.Node, loader: yaml.SafeLoader, prefix: str, lines: dict[str, int], file: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise SourceError(file, key_node.start_mark.line + 1, f"key {key!r} is not a string")
            if key in out:
                raise SourceError(file, key_node.start_mark.line + 1, f"duplicate key {key!r}")
            path = f"{prefix}.{key}" if prefix else key
            lines[path] = key_node.start_mark.line + 1
            out[key] = _walk(value_node, loader, path, lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            path = f"{prefix}.{index}"
            lines[path] = item.start_mark.line + 1
            items.append(_walk(item, loader, path, lines, file))
        return items
    return loader.construct_object(node, deep=True)


def load_yaml(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document and record the line of every value.

    Returns:
        ``(data, source_map)``.

    Raises:
        SourceError: the text is empty, is not valid YAML, or has a duplicate or non-string key.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise SourceError(file, 1, "the file is empty; a contract is a YAML mapping")
        lines: dict[str, int] = {}
        data = _walk(node, loader, "", lines, file)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        reason = exc.problem or exc.context or "malformed YAML"
        raise SourceError(file, line, f"malformed YAML: {reason}") from exc
    except yaml.YAMLError as exc:
        raise SourceError(file, 1, f"malformed YAML: {exc}") from exc
    finally:
        loader.dispose()
    return data, SourceMap(file, lines)


def read_yaml(path: Path) -> tuple[Any, SourceMap]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(str(path), 0, f"cannot read: {exc}") from exc
    return load_yaml(text, str(path))
