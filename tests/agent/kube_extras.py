"""An extension of the shared Kubernetes API double (sco/demo/kubeapi/server.py, not edited here): it also
records each request's ``Authorization`` header, so a test can check the node-bound token is presented."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from typing import Any

from sco.demo.kubeapi import KubeApiDouble


class AuthRecordingKubeApi(KubeApiDouble):
    def __init__(self, **kwargs: Any) -> None:
        self.auth: list[tuple[str, str, str | None]] = []  # (method, path, Authorization)
        super().__init__(**kwargs)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler_class()
        double = self

        class Handler(base):  # type: ignore[misc]
            def _serve(self) -> None:
                double.auth.append((self.command, self.path, self.headers.get("Authorization")))
                super()._serve()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler
