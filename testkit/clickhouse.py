"""The one ClickHouse for tests: ``sco clickhouse serve`` over a temp chDB directory for the whole session.

``clickhouse_server`` (session) starts it with a users file of its own (``USERS``: a ``default``-profile writer
and a ``readonly`` reader, fresh passwords); ``clickhouse_url`` gives each test its own database
(``http://sco:PASSWORD@127.0.0.1:PORT/?database=t_…``), ``clickhouse_migrated_url`` one with
``sco clickhouse migrate`` applied. ``ClickHouseProcess`` works outside pytest too (benches) and for tests that
restart the front end. No test needs the front end's ``--no-auth``.
"""

from __future__ import annotations

import base64
import secrets
import shutil
import tempfile
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from sco.stack import services
from sco.stack.clickhouse_http.auth import write_users_file

__all__ = ["READER", "WRITER", "ClickHouseProcess", "authorized"]

WRITER, READER = "sco", "reader"


def authorized(url: str, headers: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """``http://user:pass@host/…`` → (``http://host/…``, headers with HTTP Basic): urllib takes no userinfo."""
    parts = urlsplit(url)
    headers = dict(headers or {})
    if parts.username is None:
        return url, headers
    token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    headers.setdefault("Authorization", "Basic " + base64.b64encode(token).decode())
    netloc = parts.hostname or ""
    netloc += f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), headers


class ClickHouseProcess:
    def __init__(self, data_dir: Path | None = None, port: int | None = None) -> None:
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="sco-ch-"))
        self.port = port
        self.running: services.Running | None = None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.passwords = {WRITER: secrets.token_urlsafe(18), READER: secrets.token_urlsafe(18)}
        self.users_file = write_users_file(self.data_dir / "users.json", {
            WRITER: (self.passwords[WRITER], "default"), READER: (self.passwords[READER], "readonly")})

    def start(self) -> ClickHouseProcess:
        self.running = services.start_clickhouse(self.data_dir, self.port, users_file=self.users_file)
        self.port = self.running.port  # a restart comes back on the same port
        return self

    @property
    def base_url(self) -> str:
        """The URL without credentials (every query through it is refused: tests of authentication)."""
        assert self.running is not None
        return f"http://127.0.0.1:{self.running.port}"

    def url_for(self, user: str) -> str:
        return self.base_url.replace("http://", f"http://{user}:{self.passwords[user]}@")

    @property
    def url(self) -> str:
        """The writer's URL (``default`` profile)."""
        return self.url_for(WRITER)

    @property
    def reader_url(self) -> str:
        """The reader's URL (``readonly`` profile)."""
        return self.url_for(READER)

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        url, headers = authorized(self.url + "/")
        request = urllib.request.Request(url, data=f"CREATE DATABASE {name}".encode(), headers=headers,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        return f"{self.url}/?database={name}"

    def stop(self) -> None:
        if self.running is not None:
            services.stop_pid(self.running.pid)
            self.running = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
