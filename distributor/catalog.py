"""What the distributor serves: the signed bundle files ``sco contracts compile --out`` wrote.

One directory per partition (``<root>/<region>/<cluster>/``), each with a strong ETag (the SHA-256 of its bytes) and,
for the two bundles, the generation and age the metrics report. Pure reads of the directory; no HTTP here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from contracts.bundle_wire import AGENT_FILES, CONTROLLER_FILES, etag_matches, etag_of

from .releases import serving_dir

__all__ = ["AGENT_FILES", "CONTROLLER_FILES", "BundleFile", "Catalog", "etag_matches"]

_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


@dataclass(frozen=True)
class BundleFile:
    """One served file and its ETag."""

    partition: str
    name: str
    data: bytes
    etag: str  # quoted, strong: '"sha256:<hex>"'

    @property
    def kind(self) -> str:
        """``agent`` or ``controller``: whose bundle the file belongs to."""
        return "agent" if self.name in AGENT_FILES else "controller"


@dataclass(frozen=True)
class Served:
    """A bundle as the metrics see it."""

    partition: str
    kind: str
    generation: int
    issued_at: datetime | None


class Catalog:
    """The compiled bundles under ``root``; each read goes to the disk, so a new compile is served at once.

    While a staged release is on its canary (``releases``), the canary partition reads the staged files.
    """

    def __init__(self, root: Path) -> None:
        """Serve ``root/<region>/<cluster>/<file>``."""
        self.root = root

    def partitions(self) -> list[str]:
        """Every ``<region>/<cluster>`` with an agent or controller bundle."""
        found = {f"{p.parent.parent.name}/{p.parent.name}" for name in (AGENT_FILES[0], CONTROLLER_FILES[0])
                 for p in self.root.glob(f"*/*/{name}")}
        return sorted(found)

    def get(self, region: str, cluster: str, name: str) -> BundleFile | None:
        """The file, or None when the path names nothing served (unknown name, bad segment, missing file)."""
        if name not in AGENT_FILES + CONTROLLER_FILES or not (_SEGMENT.fullmatch(region)
                                                                 and _SEGMENT.fullmatch(cluster)):
            return None
        try:
            data = (serving_dir(self.root, region, cluster) / name).read_bytes()
        except OSError:
            return None
        return BundleFile(f"{region}/{cluster}", name, data, etag_of(data))

    def served(self) -> list[Served]:
        """The generation and issue time of every bundle (a file that is not a bundle: generation 0, no time)."""
        out = []
        for partition in self.partitions():
            region, cluster = partition.split("/")
            for kind, name in (("agent", AGENT_FILES[0]), ("controller", CONTROLLER_FILES[0])):
                found = self.get(region, cluster, name)
                if found is not None:
                    out.append(_describe(partition, kind, found.data))
        return out


def _describe(partition: str, kind: str, data: bytes) -> Served:
    try:
        doc = json.loads(data)
        issued = datetime.fromisoformat(str(doc["issued_at"]).replace("Z", "+00:00"))
        return Served(partition, kind, int(doc.get("generation", 0)), issued)
    except (ValueError, KeyError, TypeError):
        return Served(partition, kind, 0, None)
