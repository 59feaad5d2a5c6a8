"""``sco keys init``: local development keys (bundle signing and governance), ECDSA P-256 PEM."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from contracts.signing import generate_keypair

from ..errors import CliError

__all__ = ["DEFAULT_KEY_DIR", "init_keys", "register"]

DEFAULT_KEY_DIR = Path(os.environ.get("SCO_HOME", ".sco")) / "keys"
KEY_NAMES = ("signing", "governance")


def register(sub: Any) -> None:
    group = sub.add_parser("keys", help="signing keys for local development")
    cmds = group.add_subparsers(dest="keys_command", metavar="SUBCOMMAND")
    cmds.required = True
    init = cmds.add_parser("init", help="create signing and governance key pairs (refuses to overwrite)")
    init.add_argument("--dir", type=Path, default=DEFAULT_KEY_DIR)
    init.add_argument("--force", action="store_true", help="overwrite existing keys")
    init.set_defaults(handler=_init)


def init_keys(directory: Path, force: bool = False) -> list[Path]:
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


def _init(args: argparse.Namespace) -> int:
    existing = [n for n in KEY_NAMES if (args.dir / f"{n}.key.pem").exists()]
    if existing and not args.force:
        raise CliError(f"keys already exist in {args.dir} ({', '.join(existing)}); pass --force to replace them "
                       "(nodes holding the old public key will refuse new bundles).")
    for path in init_keys(args.dir, args.force):
        print(f"wrote {path}")
    return 0
