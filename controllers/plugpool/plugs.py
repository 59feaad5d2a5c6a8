"""ESPHome smart plugs through the web_server REST API.

``GET /switch/<id>`` answers ``{"id": "switch-<id>", "value": true, "state": "ON"}``;
``POST /switch/<id>/turn_on`` and ``/turn_off`` switch the relay. Basic auth when credentials are set.
Every call has a short timeout; :class:`PlugBoard` reads all plugs in parallel and keeps the last known
state of a plug that cannot be read.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote

import urllib3

from ..errors import PlugError
from .config import Credentials, PlugConfig

__all__ = ["EspHomePlugs", "PlugBoard", "PlugClient", "PlugError", "PlugReading"]

log = logging.getLogger("plugpool.plugs")


class PlugClient(Protocol):
    def read(self, plug: PlugConfig) -> bool:
        """Whether the plug's relay is on; raises ``PlugError`` when it does not answer sensibly."""

    def switch(self, plug: PlugConfig, on: bool) -> None:
        """Turn the plug's relay on or off."""


class EspHomePlugs:
    """The production plug client (urllib3, basic auth, short timeouts, no retries)."""

    def __init__(self, credentials: Credentials | None, timeout: float = 2.0, connect_timeout: float = 1.0):
        self._http = urllib3.PoolManager(
            num_pools=64, maxsize=4, retries=False, timeout=urllib3.Timeout(connect=connect_timeout, read=timeout)
        )
        self._headers: dict[str, str] = {}
        if credentials is not None:
            self._headers = urllib3.make_headers(basic_auth=f"{credentials.username}:{credentials.password}")

    def _url(self, plug: PlugConfig, action: str = "") -> str:
        return f"{plug.url}/switch/{quote(plug.switch, safe='')}{action}"

    def _call(self, method: str, url: str) -> bytes:
        try:
            resp = self._http.request(method, url, headers=self._headers)
        except urllib3.exceptions.HTTPError as exc:
            raise PlugError(f"{method} {url}: {exc.__class__.__name__}: {exc}") from exc
        if resp.status == 401:
            raise PlugError(f"{method} {url}: 401, the plug refused PLUGPOOL_PLUG_USERNAME/PASSWORD")
        if resp.status == 404:
            raise PlugError(f"{method} {url}: 404, no switch with that id; check the node's plug.switch")
        if resp.status >= 300:
            raise PlugError(f"{method} {url}: HTTP {resp.status}")
        return bytes(resp.data)

    def read(self, plug: PlugConfig) -> bool:
        """Whether the ESPHome switch is on (REST ``GET``); raises ``PlugError`` on nonsense."""
        raw = self._call("GET", self._url(plug))
        try:
            body = json.loads(raw)
        except ValueError:
            raise PlugError(f"GET {self._url(plug)}: not JSON") from None
        value = body.get("value") if isinstance(body, dict) else None
        if isinstance(value, bool):
            return value
        state = body.get("state") if isinstance(body, dict) else None
        if state in ("ON", "OFF"):
            return bool(state == "ON")
        raise PlugError(f"GET {self._url(plug)}: no switch state in {raw[:80]!r}")

    def switch(self, plug: PlugConfig, on: bool) -> None:
        """Turn the ESPHome switch on or off (REST ``POST``)."""
        self._call("POST", self._url(plug, "/turn_on" if on else "/turn_off"))


@dataclass(frozen=True)
class PlugReading:
    """What plugpool believes about one plug: ``on`` is None until the plug has been read once."""

    on: bool | None
    fresh: bool  # the last read succeeded
    error: str = ""


class PlugBoard:
    """Last known state of every configured plug; parallel reads; one unreadable plug never fails a read."""

    def __init__(self, client: PlugClient, plugs: Iterable[tuple[str, PlugConfig]], workers: int = 16):
        self._client = client
        self._plugs = dict(plugs)  # node name -> plug
        self._state: dict[str, PlugReading] = {n: PlugReading(None, False) for n in self._plugs}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(self._plugs))), thread_name_prefix="plug")

    def close(self) -> None:
        """Stop the reader threads."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def get(self, node: str) -> PlugReading:
        """The node's last plug reading."""
        with self._lock:
            return self._state[node]

    def _read_one(self, node: str) -> None:
        try:
            on = self._client.read(self._plugs[node])
        except PlugError as exc:
            with self._lock:
                last = self._state[node]
                self._state[node] = PlugReading(last.on, False, str(exc))
            log.warning("plug of %s unreadable, keeping last known state %s: %s", node, last.on, exc)
            return
        with self._lock:
            self._state[node] = PlugReading(on, True)

    def refresh(self) -> dict[str, PlugReading]:
        """Read every plug concurrently (an unreadable one keeps its last state); the readings."""
        futures = [self._pool.submit(self._read_one, n) for n in self._plugs]
        for f in futures:
            f.result()
        with self._lock:
            return dict(self._state)

    def switch(self, node: str, on: bool) -> None:
        """Switch and record the new state; raises PlugError (the state is then unknown-but-last-known)."""
        if node not in self._plugs:  # the safety rule: only configured plugs are ever switched
            raise PlugError(f"{node!r} is not a configured node; plugpool switches only its own plugs")
        try:
            self._client.switch(self._plugs[node], on)
        except PlugError as exc:
            with self._lock:
                last = self._state[node]
                self._state[node] = PlugReading(last.on, False, str(exc))
            raise
        with self._lock:
            self._state[node] = PlugReading(on, True)
