#!/usr/bin/env bash
# Stop the cluster scripts/postgres/start.sh started and delete its
# directory. Safe to run when nothing is running. Same environment as
# start.sh (POSTGRES_PORT, POSTGRES_RUN, POSTGRES_OS_USER).
set -euo pipefail

port=${POSTGRES_PORT:-25432}
run=${POSTGRES_RUN:-/tmp/weir-postgres-$port}
osuser=${POSTGRES_OS_USER:-weirpg}

[[ -d $run ]] || exit 0
if [[ -f $run/data/postmaster.pid && -f $run/bindir ]]; then
  bin=$(cat "$run/bindir")
  if ((EUID == 0)); then
    runuser -u "$osuser" -- "$bin/pg_ctl" -D "$run/data" -m fast -w -t 30 stop >&2 || true
  else
    "$bin/pg_ctl" -D "$run/data" -m fast -w -t 30 stop >&2 || true
  fi
fi
rm -rf "$run"
echo "postgres: stopped ($run)" >&2
