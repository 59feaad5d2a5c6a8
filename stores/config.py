"""Where the stores are: one URL per store, from the environment or from the stack file ``sco up`` wrote.

Resolution order for each store: the explicit argument, then ``SCO_POSTGRES_URL`` / ``SCO_NATS_URL`` /
``SCO_CLICKHOUSE_URL``, then ``$SCO_HOME/stack.json`` (``SCO_HOME`` defaults to ``.sco`` in the working
directory). Production sets the environment variables and never runs ``sco up``.

``sco up`` records each store's administrative URL (``services``) and one URL per component and store
(``components``: the controller's PostgreSQL role, the ingest's NATS user, ...); a process that names its
``component`` gets its own credential from the stack file, one that does not gets the administrative one.
The stack file is mode 0600: a user who cannot read it has no URL from it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .errors import StoreNotConfigured

__all__ = ["ENV_VARS", "STACK_FILE", "Store", "StoreNotConfigured", "StoreUrls", "load_urls", "resolve_url",
           "sco_home", "stack_file"]

Store = Literal["postgres", "nats", "clickhouse"]
ENV_VARS: dict[Store, str] = {"postgres": "SCO_POSTGRES_URL", "nats": "SCO_NATS_URL",
                              "clickhouse": "SCO_CLICKHOUSE_URL"}
STACK_FILE = "stack.json"


@dataclass(frozen=True)
class StoreUrls:
    """The URL of each store, or None where none is configured."""

    postgres: str | None = None
    nats: str | None = None
    clickhouse: str | None = None

    def get(self, store: Store) -> str | None:
        """The URL of ``store``, or None."""
        value: str | None = getattr(self, store)
        return value


def sco_home() -> Path:
    """The SCO home directory: ``$SCO_HOME``, else ``.sco`` in the working directory."""
    return Path(os.environ.get("SCO_HOME") or ".sco")


def stack_file(home: Path | None = None) -> Path:
    """The stack file that ``sco up`` writes, under ``home`` (default: ``sco_home()``)."""
    return (home or sco_home()) / STACK_FILE


def _recorded(path: Path, component: str | None) -> dict[str, str]:
    try:
        doc = json.loads(path.read_text())
        services = doc.get("services", {})
        recorded = {name: str(svc["url"]) for name, svc in services.items() if svc.get("url")}
        if component is not None:
            mine = doc.get("components", {}).get(component, {})
            recorded = {name: url for name, url in recorded.items() if not services[name].get("managed")}
            recorded.update({name: str(url) for name, url in mine.items()})
    except (OSError, ValueError, KeyError, AttributeError):
        return {}
    return recorded


def load_urls(home: Path | None = None, component: str | None = None) -> StoreUrls:
    """The URLs in effect: environment first, then the stack file.

    With ``component``: that component's own credential for each store ``sco up`` started (a store it has
    none for is absent).
    """
    path = stack_file(home)
    recorded = _recorded(path, component) if path.is_file() else {}
    urls = {store: os.environ.get(var) or recorded.get(store) for store, var in ENV_VARS.items()}
    return StoreUrls(postgres=urls["postgres"], nats=urls["nats"], clickhouse=urls["clickhouse"])


def resolve_url(store: Store, url: str | None = None, home: Path | None = None, component: str | None = None) -> str:
    """The URL to use for ``store``: ``url`` when given, else the environment, else the stack file.

    With ``component``, the stack file's URL is that component's own credential.

    Raises:
        StoreNotConfigured: none of them names one.
    """
    if url:
        return url
    found = load_urls(home, component).get(store)
    if not found:
        path = stack_file(home)
        unreadable = path.is_file() and not os.access(path, os.R_OK)
        raise StoreNotConfigured(
            f"no {store} URL{f' for {component}' if component else ''}: set {ENV_VARS[store]} or run `sco up` "
            f"(looked in {path}{', which this user may not read' if unreadable else ''})")
    return found
