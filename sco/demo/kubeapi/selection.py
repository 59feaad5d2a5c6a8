"""Label and field selectors for the Kubernetes API double."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["match_fields", "match_label_selector", "match_labels_expr", "split_selector"]

_SET = re.compile(r"^\s*(!?)([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def split_selector(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def match_label_selector(selector: str, labels: dict[str, str]) -> bool:
    """True when ``labels`` satisfy every requirement of a Kubernetes label selector."""
    for req in split_selector(selector):
        m = _SET.match(req)
        if m:
            values = {v.strip() for v in m.group(4).split(",") if v.strip()}
            key, op = m.group(2), m.group(3)
            if op == "in" and labels.get(key) not in values:
                return False
            if op == "notin" and key in labels and labels[key] in values:
                return False
        elif "!=" in req:
            key, value = (s.strip() for s in req.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in req:
            key, value = (s.strip() for s in req.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif req.startswith("!"):
            if req[1:].strip() in labels:
                return False
        elif req not in labels:
            return False
    return True


def _field(obj: Any, path: str) -> str:
    node = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def match_fields(selector: str, obj: dict[str, Any]) -> bool:
    """True when ``obj`` satisfies every requirement of a Kubernetes field selector."""
    for req in split_selector(selector):
        if "!=" in req:
            path, value = req.split("!=", 1)
            if _field(obj, path.strip()) == value.strip():
                return False
        elif "=" in req:
            path, value = req.replace("==", "=").split("=", 1)
            if _field(obj, path.strip()) != value.strip():
                return False
    return True


def match_labels_expr(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions). An empty selector matches everything."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
