"""``sco distributor serve``: each partition's signed agent and controller bundles over HTTP (ADR-15, ADR-32).

``GET /<region>/<cluster>/<file>`` serves the files ``sco contracts compile --out`` wrote (``agent-bundle.json``
and ``.sig`` to agents and controllers, ``controller-bundle.json`` with its signatures to controllers), with a
strong ``ETag`` and ``304 Not Modified`` for a matching ``If-None-Match``; ``GET /metrics`` (controllers)
reports each bundle's generation and age (``sco_distributor_bundle_age_seconds``). Every path needs a
credential (``auth.Authenticator``): 401 without one, 403 for a role that may not read the file, 404 for
anything else. The directory is read on every request, so a new compile is served at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web

from .auth import Authenticator, Principal, allowed
from .catalog import Catalog, etag_matches
from .limits import Gate, Guard, Limits

__all__ = ["Distributor"]

log = logging.getLogger(__name__)

_REALM = 'Basic realm="sco-distributor", Bearer realm="sco-distributor"'


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Distributor:
    """The HTTP front of a ``Catalog`` behind an ``Authenticator``."""

    def __init__(self, catalog: Catalog, auth: Authenticator, clock: Callable[[], datetime] = _utcnow,
                 limits: Limits | None = None) -> None:
        """Serve ``catalog`` to whoever ``auth`` accepts.

        ``clock`` dates the bundles' age; ``limits`` bound each connection's life and how many are open
        (``distributor.limits``).
        """
        self.catalog, self.auth, self.clock = catalog, auth, clock
        self.gate = Gate(limits or Limits())
        self.responses: Counter[int] = Counter()
        self._runner: web.AppRunner | None = None
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    def app(self) -> web.Application:
        """The aiohttp application."""
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/{region}/{cluster}/{name}", self._file)
        app.middlewares.append(self._count)
        return app

    @web.middleware
    async def _count(self, request: web.Request, handler: Callable[[web.Request], object]) -> web.StreamResponse:
        try:
            response = await handler(request)  # type: ignore[misc]
        except web.HTTPException as exc:
            self.responses[exc.status] += 1
            raise
        assert isinstance(response, web.StreamResponse)
        self.responses[response.status] += 1
        return response

    def _who(self, request: web.Request) -> Principal:
        principal = self.auth.authenticate(request.headers.get("Authorization"))
        if principal is None:
            raise web.HTTPUnauthorized(text="a credential is required: HTTP Basic (your own user) or a bearer token\n",
                                       headers={"WWW-Authenticate": _REALM})
        return principal

    async def _file(self, request: web.Request) -> web.StreamResponse:
        principal = self._who(request)
        m = request.match_info
        found = self.catalog.get(m["region"], m["cluster"], m["name"])
        if found is None:
            raise web.HTTPNotFound(text=f"no bundle file {request.path}\n")
        partition = f"{m['region']}/{m['cluster']}"
        if not allowed(principal, found.kind, partition):
            log.warning("DST003 %s (%s, scope %s) refused %s", principal.name, principal.role, principal.scope,
                        request.path)
            raise web.HTTPForbidden(text=f"DST003 {principal.name} ({principal.role}) may not read the {found.kind} "
                                         f"bundle of {partition}\n")
        headers = {"ETag": found.etag, "Cache-Control": "no-cache"}
        if etag_matches(request.headers.get("If-None-Match"), found.etag):
            return web.Response(status=304, headers=headers)
        kind = "application/json" if found.name.endswith(".json") else "text/plain"
        return web.Response(body=found.data, headers=headers, content_type=kind)

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        principal = self._who(request)
        if not allowed(principal, "metrics"):
            raise web.HTTPForbidden(text=f"{principal.name} ({principal.role}) may not read the metrics\n")
        return web.Response(text=self.render_metrics(), content_type="text/plain")

    def render_metrics(self) -> str:
        """Prometheus text: every bundle's age and generation, responses by status.

        Written by ``stores.telemetry`` (prometheus_client's format).
        """
        from stores.telemetry import Registry

        now = self.clock()
        registry = Registry()
        registry.describe_all([
            ("sco_distributor_bundle_age_seconds", "gauge", "Seconds since the served bundle was issued."),
            ("sco_distributor_bundle_generation", "gauge", "Generation of the served bundle."),
            ("sco_distributor_responses_total", "counter", "Responses by HTTP status.")])
        for s in self.catalog.served():
            age = max(0.0, (now - s.issued_at).total_seconds()) if s.issued_at else float("nan")
            registry.set("sco_distributor_bundle_age_seconds", age, partition=s.partition, kind=s.kind)
            registry.set("sco_distributor_bundle_generation", s.generation, partition=s.partition, kind=s.kind)
        for code, n in sorted(dict(self.responses).items()):  # a copy: the server's loop adds to it meanwhile
            registry.set("sco_distributor_responses_total", n, code=str(code))
        return registry.render()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen, every connection behind the gate; return the port."""
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        handler = self._runner.server
        assert handler is not None
        self._server = await asyncio.get_running_loop().create_server(lambda: Guard(handler(), self.gate), host,
                                                                       port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
