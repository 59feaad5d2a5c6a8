"""Slurm claims through ``slurmrestd`` (API v0.0.38, JWT): what a controller in a Kubernetes cluster reads instead
of running ``squeue``/``sinfo`` (its image has no Slurm client). ``GET <url>/slurm/v0.0.38/jobs`` and ``/nodes``
answer the same data_parser v0.0.38 documents as ``squeue --json`` / ``sinfo --json``, so the pure parsers of
``claims_slurm`` read them.

The token (``scontrol token username=<user> lifespan=<s>``) is read from its file on every request: a mounted
Secret is rotated in place, and the next pass takes the new token without a restart. Before it is sent, the token
is checked locally (a JWT, not expired, minted for ``user``): Slurm 22.05's slurmrestd passes a token through to
slurmctld and answers its refusal as HTTP 500 "Unspecified error" — the same answer as an unreachable slurmctld —
so the refusals the controller can foresee are named before the request.

Errors (``controllers.errors.SlurmRestError``), never a traceback:

* ``SLURMREST001`` the token is refused: by slurmrestd (401/403), or locally (not a JWT, expired, another user's);
* ``SLURMREST002`` slurmrestd does not answer (connection refused, name not found, timeout);
* ``SLURMREST003`` the answer is not slurmrestd's v0.0.38 JSON;
* ``SLURMREST004`` slurmrestd answered an error (404: no v0.0.38 API; 500: slurmctld refused or unreachable);
* ``SLURMREST005`` the token file cannot be read or is empty.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from controllers.errors import SlurmRestError

from .claims import WorkItem
from .claims_slurm import parse_sinfo_idle, parse_squeue

__all__ = ["API", "HttpGet", "SlurmRestError", "SlurmRestSource", "UrllibGet", "token_problem"]

API = "/slurm/v0.0.38"
MAX_TIMEOUT_S = 60.0


class HttpGet(Protocol):
    """One GET: the status and body of any answer; ``OSError`` when there is none (refused, timeout, reset)."""

    def get(self, url: str, headers: Mapping[str, str], timeout_s: float) -> tuple[int, bytes]:
        """The HTTP status and the body."""
        ...


class UrllibGet:
    """The production GET: the standard library, no retries (the next pass is the retry)."""

    def get(self, url: str, headers: Mapping[str, str], timeout_s: float) -> tuple[int, bytes]:
        """The HTTP status and the body; ``OSError`` when nothing came back."""
        req = urllib.request.Request(url, headers=dict(headers), method="GET")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return int(resp.status), bytes(resp.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), bytes(exc.read())
        except http.client.HTTPException as exc:  # a reset mid-answer, a status line that is not HTTP
            raise OSError(f"{type(exc).__name__}: {exc}") from None


def _claims(token: str) -> dict[str, Any] | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def token_problem(token: str, user: str, now: float) -> str | None:
    """Why slurmctld would refuse ``token`` for ``user`` at ``now`` (epoch seconds), as far as it shows without
    the key: not a JWT, expired, or minted for someone else; None when it looks usable."""
    claims = _claims(token)
    if claims is None:
        return "is not a JWT (three base64url parts, the middle one a JSON object)"
    exp = claims.get("exp")
    if isinstance(exp, int | float) and exp <= now:
        return f"expired at {datetime.fromtimestamp(exp, UTC).isoformat()}"
    sun = claims.get("sun")
    if isinstance(sun, str) and sun != user:
        return f"was minted for user {sun!r}, not {user!r}"
    return None


class SlurmRestSource:
    """A ``ClaimSource`` reading slurmrestd: work items of the reclaimable ``partitions`` and idle nodes."""

    def __init__(self, url: str, user: str, token_file: str, partitions: Sequence[str] = ("reclaimable",), *,
                 timeout_s: float = 10.0, http: HttpGet | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"slurmrestd timeout {timeout_s!r} s must be in (0, {MAX_TIMEOUT_S:g}] s")
        self.url, self.user, self.token_file = url.rstrip("/"), user, token_file
        self.partitions = tuple(partitions)
        self.timeout_s = timeout_s
        self.http = http or UrllibGet()
        self.clock = clock

    @property
    def _mint(self) -> str:
        return (f"mint a new token (`scontrol token username={self.user} lifespan=<seconds>` on a Slurm host) and "
                f"put it in {self.token_file} (in a cluster: the controller's Slurm token Secret, docs/operations.md)")

    def _token(self) -> str:
        try:
            token = Path(self.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SlurmRestError("SLURMREST005", f"the Slurm token file {self.token_file} cannot be read ({exc})",
                                 self._mint) from None
        if token.startswith("SLURM_JWT="):  # what `scontrol token` prints, pasted as is
            token = token.removeprefix("SLURM_JWT=")
        if not token:
            raise SlurmRestError("SLURMREST005", f"the Slurm token file {self.token_file} is empty", self._mint)
        problem = token_problem(token, self.user, self.clock())
        if problem:
            raise SlurmRestError("SLURMREST001", f"the Slurm token in {self.token_file} for user {self.user} "
                                 f"{problem}", self._mint)
        return token

    def _get(self, what: str) -> dict[str, Any]:
        url = f"{self.url}{API}/{what}"
        headers = {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self._token(), "Accept": "application/json"}
        try:
            status, body = self.http.get(url, headers, self.timeout_s)
        except OSError as exc:
            raise SlurmRestError("SLURMREST002", f"slurmrestd at {url} did not answer within {self.timeout_s:g} s "
                                 f"({getattr(exc, 'reason', None) or exc})",
                                 "check --slurm-rest-url, that slurmrestd runs and listens there, and that the "
                                 "controller may reach it (network policy, firewall)") from None
        if status in (401, 403):
            raise SlurmRestError("SLURMREST001", f"slurmrestd at {url} refused the token of user {self.user} from "
                                 f"{self.token_file} (HTTP {status}: {_snippet(body)})", self._mint)
        if status != 200:
            raise self._refused(url, status, body)
        return self._document(url, body, what)

    def _refused(self, url: str, status: int, body: bytes) -> SlurmRestError:
        if status == 404:
            return SlurmRestError("SLURMREST004", f"slurmrestd at {url} has no such path (HTTP 404)",
                                  "run slurmrestd with the v0.0.38 API (`-s openapi/v0.0.38`, Slurm 22.05) and "
                                  "check --slurm-rest-url is its base URL")
        return SlurmRestError("SLURMREST004", f"slurmrestd at {url} answered HTTP {status}: {_errors(body)}",
                              "Slurm 22.05 answers both a token slurmctld refuses (signed with another key than "
                              f"its jwt_key) and an unreachable slurmctld so: check slurmctld is up and {self._mint}")

    def _document(self, url: str, body: bytes, what: str) -> dict[str, Any]:
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get(what), list):
            raise SlurmRestError("SLURMREST003", f"slurmrestd at {url} answered what is not a v0.0.38 {what} "
                                 f"document: {_snippet(body)}",
                                 "check --slurm-rest-url points at slurmrestd itself (not a proxy's or login page)")
        if doc.get("errors"):  # a partial listing would read as missing work: the pass fails instead
            raise SlurmRestError("SLURMREST004", f"slurmrestd at {url} answered with errors: {_errors(body)}",
                                 "check slurmctld's log for the request")
        return doc

    def work(self) -> list[WorkItem]:
        """Pending and running contracted (or uncontracted) work in reclaimable partitions."""
        return parse_squeue(self._get("jobs"), self.partitions)

    def idle_nodes(self) -> set[str]:
        """Names of nodes the scheduler reports idle (no work), for the orphan rule."""
        return parse_sinfo_idle(self._get("nodes"))


def _snippet(body: bytes) -> str:
    return repr(body[:200].decode("utf-8", "replace"))


def _errors(body: bytes) -> str:
    """slurmrestd's ``errors`` list in a line (``description``/``error``/``source``), else the body's start."""
    try:
        errors = json.loads(body).get("errors") or []
        parts = [" / ".join(str(e[k]) for k in ("description", "error", "source") if e.get(k)) for e in errors]
    except (ValueError, AttributeError, TypeError):
        return _snippet(body)
    return "; ".join(p for p in parts if p) or _snippet(body)
