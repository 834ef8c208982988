#!/usr/bin/env bash
# Take the cluster scripts/postgres/start.sh started down, or bring it
# back up, keeping its data: an outage for the tests of the PostgreSQL
# sink (the database down mid-run). Same environment as start.sh
# (POSTGRES_PORT, POSTGRES_RUN, POSTGRES_OS_USER).
#
#   outage.sh down   stop the server (fast: open connections are cut)
#   outage.sh up     start it again with the options start.sh gave it
set -euo pipefail

port=${POSTGRES_PORT:-25432}
run=${POSTGRES_RUN:-/tmp/weir-postgres-$port}
osuser=${POSTGRES_OS_USER:-weirpg}

die() { echo "postgres: $*" >&2; exit 1; }
[[ -f $run/bindir ]] || die "no cluster of start.sh in $run"
bin=$(cat "$run/bindir")
as() { "$@"; }
((EUID == 0)) && as() { runuser -u "$osuser" -- "$@"; }

running() { as "$bin/pg_ctl" -D "$run/data" status >/dev/null 2>&1; }

# Both verbs are idempotent: two runs sharing the server (two weir-chaos
# runs with -db-restarts on one machine) may take it down or bring it up
# at the same time, or one while the other has; a verb whose end state
# already holds, or holds after its pg_ctl failed (the other run's got
# there first), succeeds.
case ${1:-} in
down)
  running || { echo "postgres: already down" >&2; exit 0; }
  as "$bin/pg_ctl" -D "$run/data" -m fast -w -t 30 stop >&2 || ! running || die "the server did not stop"
  ;;
# restart on a stopped server starts it with the options of its last
# start (postmaster.opts).
up)
  running && { echo "postgres: already up" >&2; exit 0; }
  as "$bin/pg_ctl" -D "$run/data" -l "$run/postgres.log" -w -t 60 restart >&2 || running || die "the server did not start"
  ;;
*) die "usage: outage.sh down|up" ;;
esac
