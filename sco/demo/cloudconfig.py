"""What cloud-init does with the controller's user-data, for exactly the cloud-config subset the controller
emits (``controllers.controller.userdata.render``) — so the demo boots real agents from it on a machine
without cloud-init.

* ``render(text, v1)``: the ``## template: jinja`` document with each ``{{ v1.<key> }}`` replaced by the
  instance's value, as ``cloud-init devel render`` prints it (the header line removed, everything else byte
  for byte; tests/sco/demo/test_cloudconfig.py holds the two side by side on the cloud-init test bed). Anything
  else jinja could mean (``{%``, ``{#``, a filter, a name outside ``v1``) is refused: the controller never
  writes it, and a half-rendered document must not boot an agent.
* ``lay_out(config, root)``: its ``write_files`` under ``root`` (re-rooted paths), contents decoded, modes set,
  as cloud-init's write_files module writes them on the node; other keys of a file entry are refused.
* ``instance_v1(instance_id, hostname, region, zone)``: the ``v1`` keys cloud-init's OpenStack datasource
  records for an instance (``/run/cloud-init/instance-data.json``) that the template may name.

``CloudConfigError`` (``sco.errors``) names the key or file, the value and the fix, with a stable code.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

import yaml

from sco.errors import CloudConfigError

__all__ = ["JINJA_HEADER", "CloudConfigError", "instance_v1", "lay_out", "render"]

JINJA_HEADER = re.compile(r"^## template:\s*jinja[ \t]*\r?\n", re.IGNORECASE)
_VARIABLE = re.compile(r"\{\{\s*v1\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_OPENERS = ("{{", "{%", "{#")
_FILE_KEYS = {"path", "content", "owner", "permissions", "encoding"}
_ENCODINGS = {None: False, "text/plain": False, "b64": True, "base64": True}


def instance_v1(instance_id: str, hostname: str, region: str, zone: str | None = None) -> dict[str, str]:
    """The standardised ``v1`` instance data of an OpenStack instance (the keys a template may use)."""
    v1 = {"cloud_name": "openstack", "platform": "openstack", "instance_id": instance_id,
          "local_hostname": hostname, "region": region}
    if zone:
        v1["availability_zone"] = zone
    return v1


def render(text: str, v1: dict[str, Any]) -> str:
    """The rendered cloud-config, as ``cloud-init devel render`` prints it for instance data ``{"v1": v1}``.

    A document without the ``## template: jinja`` header is not a template: returned as it is.

    Raises:
        CloudConfigError: the template names a ``v1`` key the instance data lacks (``CCF001``), or holds
            jinja beyond ``{{ v1.<key> }}`` (``CCF002``).
    """
    header = JINJA_HEADER.match(text)
    if header is None:
        return text

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in v1:
            raise CloudConfigError("CCF001", f"v1.{key}", None,
                                   f"the instance data has no such key (it has {', '.join(sorted(v1))}); "
                                   "name one of them or give the instance's value")
        return str(v1[key])

    body = _VARIABLE.sub(value, text[header.end():])
    left = next((opener for opener in _OPENERS if opener in body), None)
    if left is not None:
        at = body.index(left)
        raise CloudConfigError("CCF002", "template", body[at:at + 40],
                               "only {{ v1.<key> }} substitutions are rendered here (the subset the controller "
                               "writes); render this document with cloud-init itself")
    return body


def _entry(item: Any, n: int) -> tuple[str, bytes, int]:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"].startswith("/"):
        raise CloudConfigError("CCF003", f"write_files[{n}].path", item if not isinstance(item, dict)
                               else item.get("path"), "each entry needs an absolute 'path'")
    path = item["path"]
    extra = sorted(set(item) - _FILE_KEYS)
    if extra:
        raise CloudConfigError("CCF004", f"write_files[{n}] ({path})", extra,
                               f"only {', '.join(sorted(_FILE_KEYS))} are laid out here (the controller's subset)")
    encoding = item.get("encoding")
    if encoding not in _ENCODINGS:
        raise CloudConfigError("CCF005", f"write_files[{n}].encoding ({path})", encoding,
                               "use b64 or plain text (gzip is not part of the controller's subset)")
    content = str(item.get("content") or "")
    try:
        data = base64.b64decode(content, validate=True) if _ENCODINGS[encoding] else content.encode()
    except (binascii.Error, ValueError):
        raise CloudConfigError("CCF006", f"write_files[{n}].content ({path})", content[:40],
                               "the content is declared b64 but is not base64") from None
    mode = str(item.get("permissions", "0644"))
    if not re.fullmatch(r"0?[0-7]{3,4}", mode):
        raise CloudConfigError("CCF007", f"write_files[{n}].permissions ({path})", mode,
                               "give an octal mode such as '0600'")
    return path, data, int(mode, 8)


def lay_out(config: str, root: Path) -> dict[str, Path]:
    """Write the rendered cloud-config's ``write_files`` under ``root``; ``{path on the node: path under root}``.

    Raises:
        CloudConfigError: the document is not a cloud-config mapping (``CCF008``) or an entry is outside the
            subset (``CCF003``–``CCF007``).
    """
    try:
        doc = yaml.safe_load(config)
    except yaml.YAMLError as exc:
        raise CloudConfigError("CCF008", "document", str(exc).splitlines()[0],
                               "render the template first; the result must be YAML") from None
    if not isinstance(doc, dict):
        raise CloudConfigError("CCF008", "document", type(doc).__name__, "a cloud-config is a YAML mapping")
    out: dict[str, Path] = {}
    for n, item in enumerate(doc.get("write_files") or []):
        path, data, mode = _entry(item, n)
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)
        out[path] = target
    return out
