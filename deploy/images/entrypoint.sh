#!/bin/sh
# The image's ENTRYPOINT. The manifests pass `sco` sub-commands as args (`controller run …`), the Dagster
# chart's user deployment passes a whole command as args (`dagster api grpc -h 0.0.0.0 -p 3030 …`), and the
# chart's webserver and daemon set `command` (which replaces this). A first argument naming one of the image's
# programs runs that program; anything else is an `sco` sub-command.
set -e
case "${1:-}" in
  sco|sco-agent|dagster|dagster-daemon|dagster-webserver|dbt|python|python3)
    exec "$@" ;;
  "")
    exec sco --help ;;
  *)
    exec sco "$@" ;;
esac
