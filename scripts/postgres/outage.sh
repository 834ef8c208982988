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

case ${1:-} in
down) as "$bin/pg_ctl" -D "$run/data" -m fast -w -t 30 stop >&2 ;;
# restart on a stopped server starts it with the options of its last
# start (postmaster.opts).
up) as "$bin/pg_ctl" -D "$run/data" -l "$run/postgres.log" -w -t 60 restart >&2 ;;
*) die "usage: outage.sh down|up" ;;
esac
