"""A tiny CPU training loop that checkpoints with PyTorch DCP through the platform client (ADR-18/20).

    python -m workload.checkpoint.examples.pytorch_train --steps 300

Configuration is the workload environment of :mod:`workload.checkpoint.config` plus ``SCO_CHECKPOINT_INTERVAL_S``
(from the compiled contract), ``SCO_DRAIN_SIGNAL`` (default SIGTERM) and ``SCO_DRAIN_BUDGET_S``. On start it
restores the newest complete generation and resumes at the next step; it checkpoints periodically; on the
drain signal (or a notice on ``SCO_NOTICE_SOCKET``) it writes the final checkpoint and exits 0 so the
scheduler requeues it. Training is deterministic (the batch of step ``s`` comes from seed ``s``), so an
interrupted and resumed run ends with exactly the weights of an uninterrupted one.

Output lines (machine-readable, one JSON object each): ``{"event": "resumed", "step": N}``,
``{"event": "step", "step": N, "loss": ..., "t": <monotonic s>}``,
``{"event": "checkpoint", "kind": "periodic"|"final", ...}``,
``{"event": "done", "step": N, "digest": "<sha256 of the weights>"}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from workload.checkpoint import (
    AgentReporter,
    Checkpointer,
    FinalWriteFailed,
    NoticeListener,
    client_from_env,
    interval_from_env,
)
from workload.checkpoint.torch_dcp import DcpState


def emit(**fields: object) -> None:
    """Print one JSON line of ``fields`` (the example's progress log)."""
    print(json.dumps(fields, sort_keys=True), flush=True)


def model_digest(model: torch.nn.Module) -> str:
    """The SHA-256 of the model's state dict, name by name (equal models, equal digests)."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def batch(step: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch of ``step``: seeded inputs and their target, the same on every run."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(64, width, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def main(argv: list[str] | None = None) -> int:
    """Train the example model, checkpointing periodically and on a notice; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m workload.checkpoint.examples.pytorch_train")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--width", type=int, default=256, help="input width; hidden layers are 4x")
    parser.add_argument("--step-seconds", type=float, default=0.0, help="extra time per step (simulated work)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)

    budget = float(os.environ.get("SCO_DRAIN_BUDGET_S", "120"))
    listener = NoticeListener(default_budget_s=budget)
    listener.install_signal(os.environ.get("SCO_DRAIN_SIGNAL", "SIGTERM"))
    if os.environ.get("SCO_NOTICE_SOCKET"):
        listener.serve_socket(Path(os.environ["SCO_NOTICE_SOCKET"]))
    client = client_from_env()
    client.ensure_bucket()
    agent_socket = os.environ.get("SCO_AGENT_SOCKET")
    reporter = AgentReporter(client.workload, Path(agent_socket) if agent_socket else None,
                             unit=os.environ.get("SLURM_JOB_ID"))

    model = torch.nn.Sequential(torch.nn.Linear(args.width, 4 * args.width), torch.nn.ReLU(),
                                torch.nn.Linear(4 * args.width, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    state = DcpState(client, model, optimizer)
    restored = state.load()
    start = 1 if restored is None else restored + 1
    emit(event="resumed", step=start, restored=restored)

    ck = Checkpointer(client, interval_s=interval_from_env(), listener=listener, reporter=reporter)
    for step in range(start, args.steps + 1):
        x, y = batch(step, args.width)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        emit(event="step", step=step, loss=round(loss.item(), 6), t=round(time.monotonic(), 4))
        if args.step_seconds:
            time.sleep(args.step_seconds)
        t0 = time.monotonic()
        try:
            kind = ck.maybe_checkpoint(step, state.produce(step), {"framework": "pytorch-dcp"})
        except FinalWriteFailed as exc:
            emit(event="checkpoint-failed", step=step, error=str(exc))
            return 75  # EX_TEMPFAIL: requeue from the previous generation
        finally:
            state.cleanup()
        if kind is not None:
            result = ck.history[-1][1]
            notice = listener.notice
            emit(event="checkpoint", kind=kind, step=step, generation=result.generation.number,
                 bytes=result.generation.size, write_s=round(time.monotonic() - t0, 4),
                 since_notice_s=None if notice is None else round(time.monotonic() - notice.received_monotonic, 4),
                 budget_s=budget)
        if kind == "final":
            return 0
    state.save(args.steps)
    emit(event="done", step=args.steps, digest=model_digest(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
