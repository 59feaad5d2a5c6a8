"""PyTorch Distributed Checkpoint through the platform client (ADR-18: frameworks integrated once).

DCP writes its shard files and ``.metadata`` into a local staging directory; the client uploads them as one
generation (multipart, manifest last) and deletes the staging copy, so no state lives on instance storage
longer than the write. Restore downloads the newest complete generation and lets DCP load it in place.
Requires the ``ml`` extra (``torch``); imported only by workloads that use it.

    from workload.checkpoint.torch_dcp import DcpState
    state = DcpState(client, model, optimizer)
    step = state.load()          # None on a fresh start, else the step of the restored generation
    ... ck.maybe_checkpoint(step, state.produce(step))
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.state_dict_loader import load as dcp_load
from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

from .client import CheckpointClient, Generation, Source

__all__ = ["DcpState"]


class DcpState:
    """A model and its optimizer, saved and loaded with DCP through a :class:`CheckpointClient`."""

    def __init__(self, client: CheckpointClient, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 staging_root: Path | None = None) -> None:
        self.client, self.model, self.optimizer = client, model, optimizer
        self.staging_root = staging_root
        self._staged: Path | None = None

    def _state(self, step: int) -> dict[str, Any]:
        model_sd, optim_sd = get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd, "step": torch.tensor(step)}

    def produce(self, step: int) -> Callable[[], Mapping[str, Source]]:
        """For :meth:`Checkpointer.maybe_checkpoint`: stage the DCP files of the current state."""

        def files() -> Mapping[str, Source]:
            self.cleanup()
            self._staged = Path(tempfile.mkdtemp(prefix="sco-dcp-", dir=self.staging_root))
            dcp_save(self._state(step), storage_writer=FileSystemWriter(str(self._staged)), no_dist=True)
            return {p.relative_to(self._staged).as_posix(): p for p in sorted(self._staged.rglob("*")) if p.is_file()}

        return files

    def save(self, step: int) -> Generation:
        """Write the model and optimizer at ``step`` as one checkpoint generation; the generation."""
        try:
            return self.client.write(self.produce(step)(), step=step, metadata={"framework": "pytorch-dcp"}).generation
        finally:
            self.cleanup()

    def load(self) -> int | None:
        """Restore the newest complete generation into the model and optimizer; its step, or None."""
        gen = self.client.latest()
        if gen is None:
            return None
        with tempfile.TemporaryDirectory(prefix="sco-dcp-restore-", dir=self.staging_root) as tmp:
            self.client.restore(Path(tmp), gen)
            state = self._state(0)
            dcp_load(state, storage_reader=FileSystemReader(tmp), no_dist=True)
            set_state_dict(self.model, self.optimizer, model_state_dict=state["model"],
                           optim_state_dict=state["optim"])
            return int(state["step"].item())

    def cleanup(self) -> None:
        """Remove the staged files of the last save."""
        if self._staged is not None:
            shutil.rmtree(self._staged, ignore_errors=True)
            self._staged = None
