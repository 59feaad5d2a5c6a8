"""The simulated region as a service: notices and advisories on per-instance core NATS subjects, lifecycle
events on JetStream (``SCO_EVENTS``, deduplicated by ``event_id``), and an HTTP API with the provider
contract's paths plus the instance metadata mirror (ADR-05, ADR-17).

HTTP paths (JSON): ``GET /v1/catalogue``, ``/v1/rate-card``, ``/v1/reservations[?business_unit=]``,
``/v1/forward-capacity?horizon_s=``, ``/v1/quota``, ``/v1/instances[?workload=&partition=&pool=&generation=]``,
``/v1/instances/{id}``, ``/v1/instances/{id}/user-data`` (``{"instance_id", "user_data"}``: what the launch sent,
base64 as Nova's ``OS-EXT-SRV-ATTR:user_data``, null when none; only to the controller or the instance's own
identity); ``POST /v1/launch`` (a ``LaunchRequest``; user-data
over Nova's 65,535 bytes of base64 is refused, 400 ``InvalidRequest``), ``DELETE /v1/instances/{id}``,
``POST /v1/reclaim`` ``{"instances": [...], "drill": true}``, ``POST /v1/halls/{hall}/reclaim``;
``GET /metadata/{id}`` (``{"instance_id", "notices": [...]}``, what the agent polls every 5 s) and
``GET /metadata/{id}/notice``. With ``auth`` every path but ``/healthz`` and the metadata mirror needs a bearer
token, and each identity may do only its part (``controllers.simregion.auth``: 401/403 with a ``SIM`` code).
Errors: ``{"error": <type>, "message", "args"}`` with 400/403/404/409/429.

``step()`` runs the region to ``clock.now()`` and publishes what happened; ``serve()`` calls it every
``tick_s`` (live, wall clock); a replay or a test drives ``step()`` itself after moving a virtual clock.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from contracts.events import Event
from contracts.provider import Advisory, LaunchRequest, Notice
from contracts.provider_errors import (
    CapacityUnavailable,
    InvalidRequest,
    NotFound,
    NotOwned,
    ProviderError,
    QuotaExceeded,
    Throttled,
)
from contracts.subjects import advisory_subject, notice_subject
from controllers.providers.budget import TokenBucket

from .auth import RegionAuth
from .engine import Inst, SimEvent
from .region import SimulatedRegion

__all__ = ["RegionService", "error_body"]

_STATUS: dict[type[ProviderError], int] = {InvalidRequest: 400, QuotaExceeded: 403, NotOwned: 403, NotFound: 404,
                                           CapacityUnavailable: 409, Throttled: 429}


def error_body(exc: ProviderError) -> dict[str, Any]:
    """A provider error as the feed's JSON error body (type, message, arguments)."""
    params = [p for p in inspect.signature(type(exc).__init__).parameters if p != "self"]
    args = {p: getattr(exc, p) for p in params if hasattr(exc, p)}
    return {"error": type(exc).__name__, "message": str(exc), "args": json.loads(json.dumps(args, default=str))}


class RegionService:
    def __init__(self, region: SimulatedRegion, *, nats_url: str | None = None, host: str = "127.0.0.1",
                 port: int = 0, tick_s: float = 0.05, api_calls_per_s: float = 50.0,
                 auth: RegionAuth | None = None) -> None:
        self.region = region
        self.auth = auth  # None: every caller may do everything (in-process tests, `serve --no-auth`)
        self.nats_url = nats_url
        self.host, self.port, self.tick_s = host, port, tick_s
        self._nc: Any = None
        self._js: Any = None
        self._runner: web.AppRunner | None = None
        self._notices: list[Notice] = []
        self._advisories: list[Advisory] = []
        self._events: list[Event] = []
        self._latest_advisory: dict[str, Advisory] = {}
        self.published = {"notices": 0, "advisories": 0, "events": 0}
        self.errors: list[str] = []  # publish failures (NATS down); events and live notices are retried
        self._budget = TokenBucket(api_calls_per_s, burst=api_calls_per_s, key=f"region {region.region}",
                                   monotonic=lambda: region.clock.now().timestamp())
        engine = region.engine
        engine.on_notice.append(self._on_notice)
        engine.on_advisory.append(self._on_advisory)
        engine.on_event.append(self._on_event)

    def _on_notice(self, inst: Inst) -> None:
        self._notices.append(self.region.notice_of(inst))

    def _on_advisory(self, inst: Inst, at: float, expected: float) -> None:
        advisory = self.region.advisory_of(inst, at, expected)
        self._latest_advisory[inst.id] = advisory
        self._advisories.append(advisory)

    def _on_event(self, ev: SimEvent) -> None:
        self._events.append(self.region.to_event(ev))

    @property
    def url(self) -> str:
        """The service's base URL."""
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        """Start serving HTTP (and connect to NATS when a URL is set)."""
        if self.nats_url:
            from stores.nats import connect, ensure_events_stream

            self._nc = await connect(self.nats_url, name=f"simregion-{self.region.region}")
            self._js = self._nc.jetstream()
            await ensure_events_stream(self._js)
        app = web.Application(middlewares=[_authenticating(self.auth)] if self.auth is not None else [])
        app.add_routes(self._routes())
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        server = getattr(site, "_server", None)
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop serving and close the NATS connection."""
        if self._runner is not None:
            await self._runner.cleanup()
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.drain()

    async def step(self) -> None:
        """Run the region to now and publish notices, advisories and events, in that order."""
        self.region.sync()
        notices, advisories, events = self._notices, self._advisories, self._events
        self._notices, self._advisories, self._events = [], [], []
        self._latest_advisory = {k: v for k, v in self._latest_advisory.items() if k in self.region.engine.by_id}
        if self._nc is None:
            return
        try:
            for n in notices:
                await self._nc.publish(notice_subject(n.region, n.instance_id), n.model_dump_json().encode())
            for a in advisories:
                await self._nc.publish(advisory_subject(a.region, a.instance_id), a.model_dump_json().encode())
            await self._nc.flush()
        except Exception as exc:  # NATS away: retry the notices still before their deadline (the metadata
            self.errors.append(f"{type(exc).__name__}: {exc}")  # mirror serves them meanwhile)
            now = self.region.clock.now()
            self._notices = [n for n in notices if n.terminate_at > now] + self._notices
        else:
            self.published["notices"] += len(notices)
            self.published["advisories"] += len(advisories)
        sent = 0
        try:
            for i in range(0, len(events), 256):
                chunk = events[i:i + 256]
                await asyncio.gather(*(self._js.publish(e.subject, e.to_json(),
                                                        headers={"Nats-Msg-Id": str(e.event_id)}) for e in chunk))
                sent = i + len(chunk)
        except Exception as exc:  # events are kept and retried: the Nats-Msg-Id makes a resend harmless
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self._events = events[sent:] + self._events
        self.published["events"] += sent

    async def serve(self, stop: asyncio.Event | None = None) -> None:
        """Step the region until ``stop`` is set."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.tick_s)

    # --- HTTP ------------------------------------------------------------------------------------------
    def _routes(self) -> list[web.RouteDef]:
        w = _json_handler
        return [
            web.get("/v1/catalogue", w(self._catalogue)), web.get("/v1/rate-card", w(self._rate_card)),
            web.get("/v1/reservations", w(self._reservations)), web.get("/v1/forward-capacity", w(self._forward)),
            web.get("/v1/quota", w(self._quota)), web.get("/v1/instances", w(self._instances)),
            web.get("/v1/instances/{id}", w(self._instance)), web.delete("/v1/instances/{id}", w(self._terminate)),
            web.get("/v1/instances/{id}/user-data", w(self._user_data)),
            web.post("/v1/launch", w(self._launch)), web.post("/v1/reclaim", w(self._reclaim)),
            web.post("/v1/halls/{hall}/reclaim", w(self._hall)), web.get("/metadata/{id}", w(self._metadata)),
            web.get("/metadata/{id}/notice", w(self._metadata_notice)), web.get("/healthz", w(self._health)),
        ]

    async def _catalogue(self, req: web.Request) -> Any:
        return _dump(self.region.catalogue().pools)

    async def _rate_card(self, req: web.Request) -> Any:
        return _dump(self.region.rate_card())

    async def _reservations(self, req: web.Request) -> Any:
        return _dump(self.region.reservations(req.query.get("business_unit")))

    async def _forward(self, req: web.Request) -> Any:
        raw = req.query.get("horizon_s", "3600")
        if not raw.isdigit():
            raise InvalidRequest("horizon_s", raw, "give whole seconds, e.g. horizon_s=3600")
        return _dump(self.region.forward_capacity(timedelta(seconds=int(raw))))

    async def _quota(self, req: web.Request) -> Any:
        return _dump(self.region.quota_headroom())

    async def _instances(self, req: web.Request) -> Any:
        return _dump(self.region.list_instances(dict(req.query) or None))

    async def _instance(self, req: web.Request) -> Any:
        return _dump(self.region.instance(req.match_info["id"]))

    async def _user_data(self, req: web.Request) -> Any:
        iid = req.match_info["id"]
        text = self.region.user_data(iid)
        return {"instance_id": iid, "user_data": None if text is None else base64.b64encode(text.encode()).decode()}

    async def _launch(self, req: web.Request) -> Any:
        self._budget("launch")
        try:
            request = LaunchRequest.model_validate(await req.json())
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InvalidRequest(".".join(str(x) for x in err["loc"]), err.get("input"), err["msg"]) from None
        return _dump(self.region.launch(request))

    async def _terminate(self, req: web.Request) -> Any:
        self._budget("terminate")
        self.region.terminate(req.match_info["id"])
        return {"terminated": req.match_info["id"]}

    async def _reclaim(self, req: web.Request) -> Any:
        self._budget("reclaim")
        body = await req.json()
        return _dump(self.region.reclaim(tuple(body.get("instances") or ()), drill=bool(body.get("drill", True))))

    async def _hall(self, req: web.Request) -> Any:
        self._budget("reclaim")
        drill = req.query.get("drill", "false") == "true"
        return {"instances": list(self.region.hall_reclaim(req.match_info["hall"], drill=drill))}

    async def _metadata(self, req: web.Request) -> Any:
        iid = req.match_info["id"]
        notice = self.region.notice(iid)
        items = [{**_dump(notice), "kind": "notice"}] if notice else []
        advisory = self._latest_advisory.get(iid)
        if advisory is not None:
            items.append({**_dump(advisory), "kind": "advisory"})
        return {"instance_id": iid, "notices": items}

    async def _metadata_notice(self, req: web.Request) -> Any:
        notice = self.region.notice(req.match_info["id"])
        if notice is None:
            raise NotFound("notice", req.match_info["id"])
        return _dump(notice)

    async def _health(self, req: web.Request) -> Any:
        r = self.region
        return {"region": r.region, "time": r.clock.now().isoformat(), "published": self.published}


def _authenticating(auth: RegionAuth) -> Any:
    """The middleware that lets a call through only when its identity may make it (``RegionAuth.check``)."""
    @web.middleware
    async def authenticate(req: web.Request,
                           handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        refusal = auth.check(req.method, req.path, req.headers.get("Authorization"))
        if refusal is not None:
            return web.json_response({"error": "Unauthorized" if refusal.status == 401 else "Forbidden",
                                      "code": refusal.code, "message": f"{refusal.code}: {refusal.message}",
                                      "args": {}}, status=refusal.status)
        return await handler(req)
    return authenticate


def _dump(items: Any) -> Any:
    if isinstance(items, tuple | list):
        return [json.loads(x.model_dump_json()) for x in items]
    return json.loads(items.model_dump_json())


def _json_handler(fn: Any) -> Any:
    """A route's handler: the JSON it returns, or a provider error as the provider API's error body and status."""
    async def handler(req: web.Request) -> web.Response:
        try:
            return web.json_response(await fn(req))
        except ProviderError as exc:
            return web.json_response(error_body(exc), status=_STATUS.get(type(exc), 400))
        except json.JSONDecodeError as exc:
            return web.json_response(error_body(InvalidRequest("body", str(exc), "send a JSON object")), status=400)
    return handler
