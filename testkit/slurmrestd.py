"""A stand-in for Debian's ``slurmrestd`` 22.05 (API v0.0.38, ``-a rest_auth/jwt``) on a free loopback port, for
tests of ``controllers.controller.claims_slurmrest`` without a Slurm cluster. It answers as the real one does on
the Slurm test bed (deploy/testbed/slurm/up), status codes and bodies measured there:

* a request without ``X-SLURM-USER-NAME`` or ``X-SLURM-USER-TOKEN``: 401, ``Authentication failure`` (text);
* a token slurmctld refuses (unknown, or minted for another user), and an unreachable slurmctld: 500 with the
  v0.0.38 document, an empty list and ``errors: [{"error": "Unspecified error", "error_number": -1, …}]``;
* another path: 404, ``Unable find requested URL. Please view /openapi/v3 for API reference.`` (text).

``mode`` turns on the faults a test needs: ``"ctld-down"`` (every request the 500 above), ``"unauthenticated"``
(every request the 401 above, as when a proxy drops the headers), ``"html"`` (200 with a page that is not JSON),
``"slow"`` (answers after ``delay_s``). ``seen`` holds each request's headers (names in lower case).
"""

from __future__ import annotations

import base64
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from testkit.jsonserver import LoopbackHttp, send_body

__all__ = ["FakeSlurmrestd", "jwt"]

META = {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
        "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}}
SOURCES = {"jobs": ("Failed while looking for jobs", "slurm_load_jobs"), "nodes": ("", "slurm_load_node")}


def jwt(user: str, exp: float, signature: str = "c2ln") -> str:
    """A token shaped as ``scontrol token`` mints it (HS256 header, ``exp``/``iat``/``sun`` claims)."""
    def part(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()

    return ".".join([part({"alg": "HS256", "typ": "JWT"}), part({"exp": int(exp), "iat": int(exp) - 600,
                                                                 "sun": user}), signature])


class FakeSlurmrestd(LoopbackHttp):
    """Serves ``jobs`` and ``nodes`` (documents as ``squeue --json`` / ``sinfo --json`` print them) to requests
    carrying a token of ``tokens`` (token -> user)."""

    def __init__(self, tokens: dict[str, str], jobs: list[dict[str, Any]] | None = None,
                 nodes: list[dict[str, Any]] | None = None) -> None:
        self.tokens = tokens
        self.lists: dict[str, list[dict[str, Any]]] = {"jobs": jobs or [], "nodes": nodes or []}
        self.mode = "normal"
        self.delay_s = 0.0
        self.seen: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.seen.append({k.lower(): v for k, v in self.headers.items()})
                status, body, kind = fake.answer(self.path, self.headers.get("X-SLURM-USER-NAME"),
                                                 self.headers.get("X-SLURM-USER-TOKEN"))
                if fake.mode == "slow":
                    time.sleep(fake.delay_s)
                send_body(self, status, body, kind)

            def log_message(self, format: str, *args: object) -> None:
                return

        super().__init__(Handler)

    def answer(self, path: str, user: str | None, token: str | None) -> tuple[int, bytes, str]:
        """What slurmrestd answers ``GET path``: status, body, content type."""
        what = path.removeprefix("/slurm/v0.0.38/")
        if what not in self.lists:
            return 404, b"Unable find requested URL. Please view /openapi/v3 for API reference.", "text/plain"
        if not user or not token or self.mode == "unauthenticated":
            return 401, b"Authentication failure", "text/plain"
        if self.mode == "html":
            return 200, b"<html><body>Sign in</body></html>", "text/html"
        if self.mode == "ctld-down" or self.tokens.get(token) != user:
            description, source = SOURCES[what]
            error = {"description": description, "error_number": -1, "error": "Unspecified error", "source": source}
            return 500, self._doc(what, [error], []), "application/json"
        return 200, self._doc(what, [], self.lists[what]), "application/json"

    @staticmethod
    def _doc(what: str, errors: list[dict[str, Any]], items: list[dict[str, Any]]) -> bytes:
        return json.dumps({"meta": META, "errors": errors, what: items}, indent=2).encode()
