"""``python -m sco.stack.clickhouse_http DATA_DIR [PORT] --users-file PATH``: the front end without the CLI.

``DATA_DIR`` ``-`` is an in-memory engine. ``--no-auth`` instead of ``--users-file`` serves every local client
without a password: tests and development only.
"""

import argparse
import sys

from .errors import AuthConfigError, UsersFileError
from .server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sco.stack.clickhouse_http")
    parser.add_argument("data_dir", help="chDB data directory (- for an in-memory engine)")
    parser.add_argument("port", nargs="?", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--users-file", help="users JSON (mode 0600): name, password_sha256_hex, profile")
    parser.add_argument("--no-auth", action="store_true", help="no authentication: tests and development only")
    args = parser.parse_args(argv)
    try:
        return serve(None if args.data_dir == "-" else args.data_dir, host=args.host, port=args.port,
                     users_file=args.users_file, no_auth=args.no_auth)
    except (UsersFileError, AuthConfigError) as exc:
        print(f"sco clickhouse serve: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
