"""``sco fallback approvals | approve | deny``: answer the arbiter's requests for spend beyond a contract's 24-hour
cap (ADR-23), signed with the approver's own key (ADR-30).

``approvals`` lists the open requests with their priced options and deadline; ``approve REQUEST`` grants an
offered option (or a smaller ``--amount``) and ``deny REQUEST`` accepts the shortfall. The answer is signed
(ECDSA P-256, ``contracts.approvals``) and recorded with the ``approvals`` component's PostgreSQL role, which
may read requests and insert answers, nothing else; the controller's arbiter verifies and judges it
(``controllers.controller.approval_judge``) and only then may the spend happen. The same judgement runs here
first, so a wrong signer, a self-approval, an expired request or an amount out of range is refused at once with
its stable code (APR001..APR008) and nothing is recorded.
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..errors import CliError

__all__ = ["register"]


@dataclass(frozen=True)
class _Named:
    approver: str | None


def register(sub: Any) -> None:
    """Add ``sco fallback`` (the approvals of fallback spend beyond a cap) to the parser."""
    group = sub.add_parser("fallback", help="answer requests for fallback spend beyond a contract's cap (ADR-23)")
    cmds = group.add_subparsers(dest="fallback_command", metavar="SUBCOMMAND")
    cmds.required = True
    ls = cmds.add_parser("approvals", help="list open approval requests with their priced options")
    ls.add_argument("--all", action="store_true", help="also answered and expired requests, with every answer")
    ls.set_defaults(handler=_list)
    for name, text in (("approve", "grant spend beyond the cap for one request"),
                       ("deny", "refuse spend beyond the cap (the shortfall stands)")):
        p = cmds.add_parser(name, help=text)
        p.add_argument("request", metavar="REQUEST", help="request id (from `sco fallback approvals`)")
        p.add_argument("--as", dest="approver", required=True, metavar="EMAIL",
                       help="your e-mail address, as the contract names it (fallback.approver)")
        p.add_argument("--key", type=Path, required=True,
                       help="your private key (PEM, ECDSA P-256; sco keys init --approver EMAIL)")
        if name == "approve":
            p.add_argument("--option", default="cover-all", help="offered option to grant (default cover-all)")
            p.add_argument("--amount", default=None, help="grant this many EUR instead of an option's price")
        p.add_argument("--wait", type=float, default=0.0,
                       help="seconds to wait for the arbiter's verdict (default 0: record and return)")
        p.set_defaults(handler=_answer, decision="grant" if name == "approve" else "deny")
    for p in (ls, *[cmds.choices[n] for n in ("approve", "deny")]):
        p.add_argument("--region", default=None, help="only this region's requests")
        p.add_argument("--postgres", default=None,
                       help="PostgreSQL URL (default SCO_POSTGRES_URL / the stack's approvals role)")


def _connect(args: argparse.Namespace) -> Any:
    from stores import postgres
    from stores.config import StoreNotConfigured

    try:
        return postgres.connect(args.postgres, autocommit=True, component="approvals")
    except StoreNotConfigured as exc:
        raise CliError(str(exc)) from None
    except Exception as exc:  # psycopg.OperationalError: refused, bad password, no such host
        raise CliError(f"cannot connect to PostgreSQL as the approvals role: {str(exc).strip()[:300]}; start the "
                       "stack (sco up) or pass --postgres") from None


def _options(options: Any) -> str:
    parts = []
    for o in options:
        where = f" in {o['pool']} ({o.get('instances', '?')} instance(s))" if o.get("pool") else ""
        parts.append(f"    {o.get('option', '?'):<17} {o.get('units', '?'):>5} units{where}: "
                     f"{o.get('cost_eur', '?')} EUR")
    return "\n".join(parts)


def _list(args: argparse.Namespace) -> int:
    from controllers.controller.approval_judge import deadline
    from controllers.controller.approval_store import judged, open_requests

    now = datetime.now(UTC)
    with _connect(args) as conn:
        requests = open_requests(conn, args.region, answered=args.all)
        if not requests:
            print("no open approval requests" if not args.all else "no approval requests")
            return 0
        for r in requests:
            due = deadline(r)
            left = int((due - now).total_seconds())
            when = f"{left // 60} min {left % 60} s left" if left > 0 and r.state == "pending" else "deadline passed"
            print(f"{r.request_id}  {r.workload} ({r.region})  {r.state}  approver {r.approver or '-'}  "
                  f"raised by {r.raised_by or '-'}  requested {r.requested_at.isoformat()}  deadline "
                  f"{due.isoformat()} ({when})")
            print(_options(r.options))
            for j in judged(conn, r.request_id) if args.all else []:
                print(f"    answer {j.decision_id}: {j.decision} {j.amount_eur} EUR by {j.approver} -> "
                      f"{j.verdict_message or 'not judged yet'}")
    return 0


def _amount(args: argparse.Namespace, options: Any) -> Decimal:
    if args.decision == "deny":
        return Decimal(0)
    if args.amount is not None:
        try:
            return Decimal(str(args.amount))
        except InvalidOperation:
            raise CliError(f"--amount {args.amount!r} is not a number of EUR, e.g. 120.50") from None
    for o in options:
        if o.get("option") == args.option:
            return Decimal(str(o.get("cost_eur", "0")))
    offered = ", ".join(str(o.get("option")) for o in options) or "none"
    raise CliError(f"--option {args.option!r} was not offered for this request (offered: {offered}); pick one of "
                   "them or give --amount")


def _answer(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from contracts.approvals import ApprovalDecision, sign_decision
    from contracts.errors import ContractsError
    from contracts.signing import load_private_key, public_pem
    from controllers.controller.approval_judge import judge
    from controllers.controller.approval_store import open_requests, submit

    try:
        rid = str(uuid.UUID(args.request))
    except ValueError:
        raise CliError(f"REQUEST {args.request!r} is not a request id; list them with `sco fallback approvals`") \
            from None
    with _connect(args) as conn:
        found = [r for r in open_requests(conn, args.region, answered=True) if r.request_id == rid]
        if not found:
            raise CliError(f"APR001: no approval request {rid}; list the open ones with `sco fallback approvals`")
        request = found[0]
        try:
            pem = args.key.read_bytes()
            public = public_pem(load_private_key(pem))
            decision = ApprovalDecision(request_id=uuid.UUID(rid), workload=request.workload, region=request.region,
                                        decision=args.decision, amount_eur=_amount(args, request.options),
                                        approver=args.approver, decided_at=datetime.now(UTC))
            signed = sign_decision(decision, pem)
        except OSError as exc:
            raise CliError(f"--key {args.key}: {exc.strerror}; create one with sco keys init --approver EMAIL") \
                from None
        except (ContractsError, ValidationError) as exc:
            raise CliError(f"{str(exc).splitlines()[0]}") from None
        verdict = judge(request, signed, _Named(request.approver), datetime.now(UTC), keys={args.approver: public})
        if not verdict.accepted:
            raise CliError(f"{verdict.message} (nothing recorded)")
        did = submit(conn, signed)
        print(f"recorded {args.decision} of request {rid} as answer {did}; the arbiter judges it on its next pass")
        return _await(conn, rid, str(did), args.wait)


def _await(conn: Any, request_id: str, decision_id: str, wait_s: float) -> int:
    from controllers.controller.approval_store import judged

    give_up = time.monotonic() + max(0.0, wait_s)
    while True:
        mine = [j for j in judged(conn, request_id) if j.decision_id == decision_id]
        if mine and mine[0].verdict_code:
            print(mine[0].verdict_message)
            return 0 if mine[0].verdict_code == "APR000" else 1
        if time.monotonic() >= give_up:
            if wait_s > 0:
                print("no verdict yet: see `sco fallback approvals --all`")
            return 0
        time.sleep(0.5)
