"""Patch semantics for the Kubernetes API double: JSON merge patch (RFC 7386, also used for strategic merge
patches, lists replaced) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["apply_json_patch", "merge_patch"]


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with a JSON merge patch (RFC 7386) applied; the input is not changed."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):  # strategic-merge directives ($patch, $retainKeys...) are ignored
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _bad(f"json patch path {path!r} must start with /")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _bad(message: str) -> Exception:
    from sco.errors import KubeApiError as ApiError

    return ApiError(422, message)


def _parent(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    node = doc
    for tok in tokens[:-1]:
        if isinstance(node, list):
            node = node[int(tok)]
        elif isinstance(node, dict) and tok in node:
            node = node[tok]
        else:
            raise _bad(f"json patch: path element {tok!r} does not exist")
    return node, tokens[-1]


def _get(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for tok in tokens:
        try:
            node = node[int(tok)] if isinstance(node, list) else node[tok]
        except (KeyError, IndexError, ValueError, TypeError):
            raise _bad(f"json patch: path element {tok!r} does not exist") from None
    return node


def _remove(doc: Any, tokens: list[str]) -> Any:
    parent, last = _parent(doc, tokens)
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, IndexError, ValueError):
        raise _bad(f"json patch: cannot remove missing {last!r}") from None


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens)
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise _bad(f"json patch: cannot add below a scalar at {last!r}")
    return doc


def apply_json_patch(doc: Any, ops: list[Any]) -> Any:
    """``doc`` with a JSON patch (RFC 6902) applied; the input is not changed."""
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, tokens = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens)
            if not tokens:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent, last = _parent(doc, tokens)
                parent[int(last) if isinstance(parent, list) else last] = copy.deepcopy(op.get("value"))
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise _bad(f"json patch: test failed at {op.get('path')!r}")
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, tokens, value)
        else:
            raise _bad(f"json patch: unknown op {kind!r}")
    return doc
