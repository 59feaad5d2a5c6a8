"""The errors of the ``sco`` top floor (the CLI, its commands and the embedded stack). Standard library only.

    Exception
    ├── CliError             a usage or input error, printed as one line; exit code 2 unless ``code`` says
    ├── ClickHouseError      the embedded ClickHouse front end's error, in ClickHouse's own shape
    │                        (``Code: N. DB::Exception: …``); ``http_status`` maps it to an HTTP status
    ├── PortTaken            an embedded server could not bind the port picked for it: another process took it
    │                        first (a RuntimeError, so callers that wait for a server to start catch it)
    ├── KubeApiError         what the Kubernetes API double (``sco.demo.kubeapi``) answers a request with: the
    │                        HTTP status ``code`` and its ``kind: Status`` body (``status()``); never raised to
    │                        a caller of ours (``sco.demo.kubeapi`` re-exports it as ``ApiError``)
    └── ValueError
        ├── CloudConfigError the demo's cloud-config renderer (``sco.demo.cloudconfig``) was given more than the
        │                    controller's subset (``CCF001``–``CCF008``), naming the key or file, value and fix
        ├── UsersFileError   the front end's users file is missing, readable by others or malformed
        │                    (``CHA001``–``CHA004``, naming the file and the field): it does not start
        ├── AuthConfigError  the front end was given neither a users file nor ``--no-auth`` (``CHA005``)
        ├── PolicyError      the front end's ``users.xml`` cannot be read as an access policy (``CHA006``)
        └── RenderError      ``sco deploy render`` was given an input the install cannot be rendered from
                             (``DEP0nn``, leading the message; ``sco.deploy.render`` re-exports it)

The commands turn the lower floors' errors (``ContractsError``, ``StoresError``, ``AgentError``, ...) into
``CliError``, chaining the cause where it helps. ``sco.stack.clickhouse_http`` re-exports ``ClickHouseError``,
``sco.stack.clickhouse_http.errors`` the two users-file errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["AuthConfigError", "CliError", "ClickHouseError", "CloudConfigError", "KubeApiError", "PolicyError",
           "PortTaken", "RenderError", "UsersFileError"]

_CLICKHOUSE_ERROR = re.compile(r"Code: (\d+)\. .*?(?:\(([A-Z0-9_]+)\))?(?: \(version [^)]*\))?\s*$", re.S)


class CliError(Exception):
    """Printed as one line on stderr; exit code 2 (usage/input) unless ``code`` says otherwise."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class ClickHouseError(Exception):
    """An error in the shape ClickHouse reports it: ``Code: N. DB::Exception: …``."""

    def __init__(self, code: int, message: str, name: str = "") -> None:
        super().__init__(message)
        self.code, self.name = code, name

    @classmethod
    def from_engine(cls, exc: BaseException) -> ClickHouseError:
        """The engine's exception as ClickHouse reports it (code and name parsed from its text)."""
        text = str(exc).strip()
        match = _CLICKHOUSE_ERROR.match(text)
        if match:
            return cls(int(match.group(1)), text, match.group(2) or "")
        return cls(1001, f"Code: 1001. DB::Exception: {text}. (STD_EXCEPTION)", "STD_EXCEPTION")

    @classmethod
    def make(cls, code: int, name: str, message: str) -> ClickHouseError:
        """An error in ClickHouse's own message format for ``code`` and ``name``."""
        return cls(code, f"Code: {code}. DB::Exception: {message}. ({name})", name)


class CloudConfigError(ValueError):
    """A cloud-config the demo's renderer does not handle; says the key or file, the value and the fix."""

    def __init__(self, code: str, field: str, value: object, fix: str) -> None:
        self.code, self.field, self.value, self.fix = code, field, value, fix
        super().__init__(f"{code}: cloud-config {field} is {value!r}; {fix}")


class UsersFileError(ValueError):
    """The ClickHouse front end's users file is missing, readable by others, or not the documented shape."""

    def __init__(self, code: str, path: str, field: str, problem: str, next_step: str) -> None:
        super().__init__(f"{code} users file {path}: {field}: {problem}; {next_step}")
        self.code, self.path, self.field = code, path, field


class AuthConfigError(ValueError):
    """The ClickHouse front end was asked to start without a users file and without ``--no-auth``."""

    code = "CHA005"

    def __init__(self) -> None:
        super().__init__("CHA005 the ClickHouse front end needs --users-file PATH (JSON, mode 0600: "
                         '{"users": [{"name": ..., "password_sha256_hex": ..., "profile": "default"|"readonly"}]}); '
                         "--no-auth (tests and development only) serves every local user without a password")


# the reason of a Kubernetes ``Status`` for each HTTP status the API double answers with
KUBE_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
                409: "Conflict", 410: "Gone", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
                500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


class KubeApiError(Exception):
    """A Kubernetes API error as the API server answers it: ``code`` and a ``kind: Status`` body."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason or KUBE_REASONS.get(code, "Unknown")
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``kind: Status`` body of the answer."""
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        return body


class PortTaken(RuntimeError):
    """An embedded server exited because the port picked for it was taken by another process before it bound
    it: the caller picks another port (a fresh one) or says which process holds it (a recorded one)."""


class RenderError(ValueError):
    """An input the install cannot be rendered from; the message leads with its code (DEP0nn)."""


class PolicyError(ValueError):
    """``users.xml`` cannot be read as a policy (``CHA006``): the front end does not start."""

    def __init__(self, path: Path, where: str, problem: str) -> None:
        super().__init__(f"CHA006 {path}: {where} {problem}; fix the file (ClickHouse's users.xml format, see "
                         "deploy/clickhouse/users.xml)")
