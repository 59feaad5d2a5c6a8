"""``python -m sco.stack.clickhouse_http DATA_DIR [PORT] --users-file PATH``: the front end without the CLI.

``DATA_DIR`` ``-`` is an in-memory engine. ``--no-auth`` instead of ``--users-file`` serves every local client
without a password: tests and development only. The process is the guard (:mod:`.frontdoor`); it starts the
engine as its child with the internal ``--engine-socket`` and ``--guard-pid``.
"""

import argparse
import ctypes
import os
import signal
import sys

from .errors import AuthConfigError, UsersFileError

_PR_SET_PDEATHSIG = 1


def _die_with(guard_pid: int) -> bool:
    """Have the kernel kill this process when the guard dies, however it dies; False when it is already gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    return os.getppid() == guard_pid  # the guard died before prctl: nobody would signal us


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sco.stack.clickhouse_http")
    parser.add_argument("data_dir", help="chDB data directory (- for an in-memory engine)")
    parser.add_argument("port", nargs="?", type=int, default=0, help="0 picks a free port (printed on start)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--users-file", help="users JSON (mode 0600): name, password_sha256_hex, profile")
    parser.add_argument("--no-auth", action="store_true", help="no authentication: tests and development only")
    parser.add_argument("--verbose", action="store_true", help="log every request on stderr")
    parser.add_argument("--engine-socket", help=argparse.SUPPRESS)  # internal: the guard's engine child
    parser.add_argument("--guard-pid", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    data_dir = None if args.data_dir == "-" else args.data_dir
    try:
        if args.engine_socket:
            if args.guard_pid is None or not _die_with(args.guard_pid):
                print("sco clickhouse engine: the guard is gone; not starting", file=sys.stderr)
                return 1
            from .server import serve as serve_engine

            return serve_engine(data_dir, verbose=args.verbose, users_file=args.users_file, no_auth=args.no_auth,
                                unix_socket=args.engine_socket)
        from .frontdoor import serve

        return serve(data_dir, host=args.host, port=args.port, verbose=args.verbose, users_file=args.users_file,
                     no_auth=args.no_auth)
    except (UsersFileError, AuthConfigError) as exc:
        print(f"sco clickhouse serve: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
