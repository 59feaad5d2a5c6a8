"""Small helpers shared by the stack tests."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from contracts.events import Event, EventKind
from testkit.clickhouse import authorized


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def http(url: str, body: bytes | None = None, headers: dict[str, str] | None = None, method: str | None = None,
         ) -> Reply:
    url, headers = authorized(url, headers)  # credentials in the URL travel as HTTP Basic
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return Reply(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers.items()), error.read())


def make_event(i: int, region: str = "r1", kind: EventKind = EventKind.PLACED) -> Event:
    return Event(event_id=uuid.UUID(int=i + 1), kind=kind, region=region,
                 time=datetime(2026, 11, 1, tzinfo=UTC) + timedelta(seconds=i), partition="p1", pool="pool-a",
                 instance=f"i-{i}", workload="w1", contract_version="v1", cause="test", source="tests",
                 attributes={"n": i})
