#!/usr/bin/env bash
# Point-in-time restore with pgBackRest into a NEW cluster (never over the one that failed: keep it
# for the post-mortem). Restores the newest backup taken before TARGET_TIME, replays the archived
# WAL up to that moment, promotes, and leaves the cluster running on PORT. Archiving is off in the
# restored cluster (archive-mode=off) so it never writes into the repository of the cluster it
# came from; point the service at it, then set up archiving and a first full backup of its own
# (docs/operations.md, runbook "Restore").
#
#   scripts/restore.sh --stanza app --target '2026-12-02 01:30:00+00' --pgdata /var/lib/postgresql/15/restored --port 5440
#
# Options: --stanza NAME, --target TIME (any timestamptz PostgreSQL reads; the transactions that
# committed at or before it are kept), --pgdata DIR (must not exist or be empty), --port N,
# --config FILE (pgbackrest.conf; default /etc/pgbackrest.conf), --bindir DIR (PostgreSQL's bin,
# default /usr/lib/postgresql/15/bin). Run as root (it runs PostgreSQL as postgres) or as postgres.
set -euo pipefail

stanza='' target='' pgdata='' port='' config=/etc/pgbackrest.conf bindir=/usr/lib/postgresql/15/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --stanza) stanza="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --pgdata) pgdata="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --bindir) bindir="$2"; shift 2 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$stanza" ] || [ -z "$target" ] || [ -z "$pgdata" ] || [ -z "$port" ]; then
  echo "usage: $0 --stanza NAME --target TIME --pgdata NEW_DIR --port PORT [--config FILE] [--bindir DIR]" >&2
  exit 2
fi
if [ -d "$pgdata" ] && [ -n "$(ls -A "$pgdata")" ]; then
  echo "$pgdata is not empty: restore into a new directory" >&2
  exit 2
fi

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

mkdir -p "$pgdata"
[ "$(id -u)" = 0 ] && chown postgres: "$pgdata"
chmod 700 "$pgdata"

echo "== restoring stanza $stanza to $target into $pgdata"
as_postgres pgbackrest --config="$config" --stanza="$stanza" --pg1-path="$pgdata" \
  --type=time --target="$target" --target-action=promote --archive-mode=off \
  --log-level-console=warn restore

echo "== starting the restored cluster on port $port (replays WAL to the target, then promotes)"
as_postgres "$bindir/pg_ctl" -D "$pgdata" -l "$pgdata/restore.log" -w -t 120 \
  -o "-c port=$port -c unix_socket_directories=$pgdata -c listen_addresses=127.0.0.1" start

for _ in $(seq 1 120); do
  state=$(as_postgres "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atc 'select pg_is_in_recovery()' 2>/dev/null || true)
  if [ "$state" = f ]; then
    echo "== restored to $target and promoted: postgres://postgres@127.0.0.1:$port/"
    exit 0
  fi
  sleep 0.5
done
echo "the restored cluster did not finish recovery; see $pgdata/restore.log" >&2
exit 1
