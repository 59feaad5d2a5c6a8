"""``python -m sco.stack.clickhouse_http DATA_DIR [PORT]``: the front end without the CLI (used by the stack)."""

import sys

from .server import serve

if __name__ == "__main__":
    sys.exit(serve(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else None,
                   port=int(sys.argv[2]) if len(sys.argv) > 2 else 0))
