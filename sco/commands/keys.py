"""``sco keys init``: local development keys (bundle signing and governance), ECDSA P-256 PEM; with
``--approver EMAIL`` an approver's key pair for signing answers to fallback approval requests (the public half
goes to the controller's ``--approver-keys`` directory as ``<e-mail>.pub.pem``)."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from contracts.signing import generate_keypair

from ..errors import CliError

__all__ = ["DEFAULT_KEY_DIR", "approver_keys", "init_approver_key", "init_keys", "register"]

DEFAULT_KEY_DIR = Path(os.environ.get("SCO_HOME", ".sco")) / "keys"
KEY_NAMES = ("signing", "governance")
_EMAIL = re.compile(r"[^@\s/]+@[^@\s/]+\.[^@\s/]+")


def register(sub: Any) -> None:
    """Add ``sco keys`` to the parser."""
    group = sub.add_parser("keys", help="signing keys for local development")
    cmds = group.add_subparsers(dest="keys_command", metavar="SUBCOMMAND")
    cmds.required = True
    init = cmds.add_parser("init", help="create signing and governance key pairs (refuses to overwrite)")
    init.add_argument("--dir", type=Path, default=DEFAULT_KEY_DIR)
    init.add_argument("--force", action="store_true", help="overwrite existing keys")
    init.add_argument("--approver", default=None, metavar="EMAIL",
                      help="create only an approver's key pair in DIR/approvers/<EMAIL>.key.pem / .pub.pem")
    init.set_defaults(handler=_init)


def init_keys(directory: Path, force: bool = False) -> list[Path]:
    """Create the signing and governance key pairs in ``directory`` (no overwrite unless ``force``); the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in KEY_NAMES:
        private, public = directory / f"{name}.key.pem", directory / f"{name}.pub.pem"
        if private.exists() and not force:
            continue
        pair = generate_keypair()
        private.write_bytes(pair.private_pem)
        private.chmod(0o600)
        public.write_bytes(pair.public_pem)
        written += [private, public]
    return written


def init_approver_key(directory: Path, email: str, force: bool = False) -> tuple[Path, Path]:
    """``directory/approvers/<email>.key.pem`` (0600) and ``.pub.pem``; refuses to overwrite unless ``force``."""
    if not _EMAIL.fullmatch(email):
        raise CliError(f"--approver {email!r} is not an e-mail address; give the address the contract names as "
                       "fallback.approver")
    folder = directory / "approvers"
    folder.mkdir(parents=True, exist_ok=True)
    private, public = folder / f"{email}.key.pem", folder / f"{email}.pub.pem"
    if private.exists() and not force:
        raise CliError(f"{private} exists; pass --force to replace it (answers signed with the old key stop "
                       "verifying once the controller holds the new public key)")
    pair = generate_keypair()
    private.write_bytes(pair.private_pem)
    private.chmod(0o600)
    public.write_bytes(pair.public_pem)
    return private, public


def approver_keys(directory: Path | None) -> tuple[tuple[str, bytes], ...]:
    """The approvers' registered public keys: ``(<e-mail>, PEM)`` from ``<e-mail>.pub.pem`` files in
    ``directory`` (default ``$SCO_HOME/keys/approvers``; missing: none, so no answer verifies)."""
    folder = directory if directory is not None else DEFAULT_KEY_DIR / "approvers"
    if directory is not None and not folder.is_dir():
        raise CliError(f"--approver-keys {folder} is not a directory; create it and put each approver's "
                       "<e-mail>.pub.pem there (sco keys init --approver EMAIL)")
    if not folder.is_dir():
        return ()
    return tuple(sorted((p.name[:-len(".pub.pem")], p.read_bytes()) for p in folder.glob("*.pub.pem")
                        if _EMAIL.fullmatch(p.name[:-len(".pub.pem")])))


def _init(args: argparse.Namespace) -> int:
    if args.approver:
        for path in init_approver_key(args.dir, args.approver, args.force):
            print(f"wrote {path}")
        return 0
    existing = [n for n in KEY_NAMES if (args.dir / f"{n}.key.pem").exists()]
    if existing and not args.force:
        raise CliError(f"keys already exist in {args.dir} ({', '.join(existing)}); pass --force to replace them "
                       "(nodes holding the old public key will refuse new bundles).")
    for path in init_keys(args.dir, args.force):
        print(f"wrote {path}")
    return 0
