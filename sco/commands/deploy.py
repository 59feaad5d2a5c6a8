"""``sco deploy monitoring``: the PrometheusRule of deploy/kubernetes/monitoring from the one rules file.
``sco deploy render``: one region's whole Kubernetes install (sco.deploy.render) into a directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sco.errors import CliError

__all__ = ["register"]


def _monitoring(args: argparse.Namespace) -> int:
    from sco.deploy.monitoring import prometheus_rule_text

    try:
        text = prometheus_rule_text(args.rules)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CliError(f"{what} {path}: {exc.strerror or exc}") from None


def _metrics_token(args: argparse.Namespace, home: Path) -> str:
    """The token every scrape sends: the file given, else one kept in the stack's home (made once, 0600)."""
    import secrets

    if args.metrics_token_file is not None:
        return _read(args.metrics_token_file, "--metrics-token-file").strip()
    path = home / "metrics-token"
    if not path.is_file():
        path.write_text(secrets.token_hex(24) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def _nats_users(home: Path) -> tuple[dict[str, Any], ...]:
    """The stack's NATS users as the server configuration names them (bcrypt hashes, subject permissions)."""
    from sco.stack import credentials as creds_mod

    users = []
    for user in creds_mod.nats_users(creds_mod.load_or_create(home)):
        entry: dict[str, Any] = {"user": user.name, "password": creds_mod.password_hash(user.password)}
        # the same rules as the local stack's nats.conf: the publish denies (other components' consumers) and,
        # for a user allowed nothing, a deny of every subject (an empty list would allow every subject)
        permissions = creds_mod.nats_permissions(user)
        if permissions is not None:
            entry["permissions"] = permissions
        users.append(entry)
    return tuple(users)


def _clickhouse_password_hashes(home: Path) -> dict[str, str]:
    """The stack's ClickHouse users and the SHA-256 of each password (the server's ``password_sha256_hex``)."""
    from sco.stack import credentials as creds_mod

    document = creds_mod.clickhouse_users_document(creds_mod.load_or_create(home))
    return {str(u["name"]): str(u["password_sha256_hex"]) for u in document["users"]}
def _slurm_rest(pairs: list[str]) -> dict[str, str]:
    """``<cluster>=<url>`` pairs as a mapping; a pair without ``=`` is refused."""
    out = {}
    for pair in pairs:
        cluster, sep, url = pair.partition("=")
        if not sep or not cluster or not url:
            raise CliError(f"DEP010: --slurm-rest-url {pair!r} is not <cluster>=<url>, e.g. "
                           "slurm-hpc=http://10.40.0.10:6820")
        out[cluster] = url
    return out


def _render_input(args: argparse.Namespace) -> Any:
    import json

    from sco.deploy.render import BASES, RenderInput
    from sco.stack.credentials import CREDENTIALS_FILE
    from stores.config import sco_home

    home = args.home or sco_home()
    stack = json.loads(_read(home / "stack.json", "the stack file (run `sco up` first)"))
    region_dir = args.bundles / args.region
    if not region_dir.is_dir():
        raise CliError(f"DEP005: {region_dir} not found: --bundles must be the output of `sco contracts compile`")
    bundles = {d.name: {f.name: f.read_text() for f in d.iterdir() if f.is_file()}
               for d in sorted(region_dir.iterdir()) if d.is_dir()}
    keys = {"bundle-signing.pub": _read(args.pubkey, "--pubkey"),
            "governance.pub": _read(args.governance_pubkey, "--governance-pubkey")}
    settings = args.contracts / "compiler.yaml"
    kubernetes = {b: {f.name: f.read_text() for f in sorted((args.kubernetes / b).glob("*.yaml"))} for b in BASES
                  if (args.kubernetes / b).is_dir()}
    helm = args.kubernetes.parent / "helm" / "nats-values.yaml"
    return RenderInput(nats_values=helm.read_text() if helm.is_file() else "", nats_users=_nats_users(home),
                       clickhouse_password_hashes=_clickhouse_password_hashes(home),
                       region=args.region, image=args.image, release=args.release, stack=stack,
                       distributor_credentials=_read(home / CREDENTIALS_FILE, "the stack's credentials"),
                       metrics_token=_metrics_token(args, home),
                       compiler_settings=settings.read_text() if settings.is_file() else "{}\n",
                       bundles=bundles, public_keys=keys, kubernetes=kubernetes,
                       slurm_rest=_slurm_rest(args.slurm_rest_url), slurm_user=args.slurm_user)


def _render(args: argparse.Namespace) -> int:
    from sco.deploy.render import RenderError, plan, write

    try:
        files = plan(_render_input(args))
    except RenderError as exc:
        raise CliError(str(exc)) from None
    write(files, args.out)
    print(f"wrote {len(files)} files to {args.out}; install with `kubectl apply -k {args.out}`")
    return 0


def register(subparsers: Any) -> None:
    """Add ``sco deploy monitoring|render`` (what ``deploy/`` installs) to the parser."""
    group = subparsers.add_parser("deploy", help="generate what deploy/ installs")
    sub = group.add_subparsers(dest="deploy_command", required=True)
    p = sub.add_parser("monitoring", help="the PrometheusRule from deploy/monitoring/rules/sco-alerts.yml")
    p.add_argument("--rules", type=Path, default=Path("deploy/monitoring/rules/sco-alerts.yml"))
    p.add_argument("--out", type=Path, default=None, help="file to write (default: standard output)")
    p.set_defaults(handler=_monitoring)
    r = sub.add_parser("render", help="one region's install (Secrets, ConfigMaps, overlay) for `kubectl apply -k`")
    r.add_argument("--region", required=True, help="the region this install serves (partitions, controllers, relay)")
    r.add_argument("--out", type=Path, required=True, help="directory to write")
    r.add_argument("--image", required=True, help="the image repository, e.g. registry.example.org/sco")
    r.add_argument("--release", required=True, help="the image tag; the migrate Job is named after it")
    r.add_argument("--bundles", type=Path, required=True, help="the output directory of `sco contracts compile`")
    r.add_argument("--pubkey", type=Path, required=True, help="the bundle-signing public key")
    r.add_argument("--governance-pubkey", type=Path, required=True,
                   help="the governance public key (the controllers verify governed changes with it)")
    r.add_argument("--contracts", type=Path, default=Path("deploy/contracts"),
                   help="the contract repository (its compiler.yaml; default deploy/contracts)")
    r.add_argument("--kubernetes", type=Path, default=Path("deploy/kubernetes"),
                   help="the release's deploy/kubernetes (bases; default deploy/kubernetes)")
    r.add_argument("--home", type=Path, default=None, help="the stack whose credentials go into the Secrets "
                                                          "(default $SCO_HOME)")
    r.add_argument("--metrics-token-file", type=Path, default=None,
                   help="the scrape token (default: one kept in the stack's home)")
    r.add_argument("--slurm-rest-url", action="append", default=[], metavar="CLUSTER=URL",
                   help="a Slurm partition's slurmrestd (repeat per partition): its controller reads claims through "
                        "it with the token of Secret sco-slurm-token-<region>-<cluster>")
    r.add_argument("--slurm-user", default="sco", help="the Slurm user the tokens are minted for (default sco)")
    r.set_defaults(handler=_render)
