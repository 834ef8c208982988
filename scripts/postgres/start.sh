#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on a loopback port for the tests of
# the PostgreSQL sink (sink/postgres, tests/), and print its DSN as
#
#   WEIR_POSTGRES_DSN=postgres://weir@127.0.0.1:<port>/weir?sslmode=disable
#
# PostgreSQL's binaries come from the machine (pg_ctl on PATH, or the
# newest /usr/lib/postgresql/*/bin); when there are none and this runs as
# root, `apt-get install -y postgresql` installs them. PostgreSQL refuses
# to run as root: as root the cluster runs as the user POSTGRES_OS_USER
# (default weirpg, created if missing). Authentication is trust, on
# 127.0.0.1 only. scripts/postgres/stop.sh stops it and deletes its files.
#
# Environment:
#   POSTGRES_PORT     the port, default 25432 (below the ephemeral range,
#                     where a TIME_WAIT socket could hold it)
#   POSTGRES_RUN      the cluster's directory, default /tmp/weir-postgres-<port>
#   POSTGRES_OS_USER  the user the server runs as when started by root
set -euo pipefail

port=${POSTGRES_PORT:-25432}
run=${POSTGRES_RUN:-/tmp/weir-postgres-$port}
osuser=${POSTGRES_OS_USER:-weirpg}

log() { echo "postgres: $*" >&2; }
die() { log "$*"; exit 1; }

bindir() {
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return
  fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

bin=$(bindir)
if [[ -z $bin || ! -x $bin/pg_ctl ]]; then
  ((EUID == 0)) || die "no PostgreSQL binaries (pg_ctl, initdb) and not root to install them"
  log "installing PostgreSQL (apt-get)"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  bin=$(bindir)
  [[ -n $bin && -x $bin/pg_ctl ]] || die "apt-get installed no pg_ctl"
fi

# as runs a command as the server's user.
as() { "$@"; }
if ((EUID == 0)); then
  if ! id -u "$osuser" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$osuser"
  fi
  as() { runuser -u "$osuser" -- "$@"; }
fi

# A cluster left in $run by an earlier run (a killed CI job, a machine
# image taken while one ran) is throwaway like any other: a live one is
# stopped, a dead one's files (a stale postmaster.pid) are removed below.
if [[ -f $run/data/postmaster.pid ]]; then
  if as "$bin/pg_ctl" -D "$run/data" status >/dev/null 2>&1; then
    log "stopping the cluster an earlier run left in $run"
    as "$bin/pg_ctl" -D "$run/data" -m immediate -w -t 30 stop >&2 || true
  else
    log "removing the files of a cluster that no longer runs in $run"
  fi
fi
rm -rf "$run"
mkdir -p "$run"
((EUID == 0)) && chown "$osuser" "$run"
as "$bin/initdb" -D "$run/data" -U weir --auth=trust -E UTF8 --no-locale >"$run/initdb.log" 2>&1 ||
  { cat "$run/initdb.log" >&2; die "initdb failed"; }
# fsync off: a throwaway cluster for tests, faster on a shared machine.
if ! as "$bin/pg_ctl" -D "$run/data" -l "$run/postgres.log" -w -t 60 \
  -o "-p $port -k $run -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" start >&2; then
  tail -n 30 "$run/postgres.log" >&2 || true
  die "the server did not start"
fi
as "$bin/psql" -h 127.0.0.1 -p "$port" -U weir -d postgres -qc 'CREATE DATABASE weir' >&2 ||
  die "could not create the database weir"
echo "$bin" >"$run/bindir"
log "up on 127.0.0.1:$port ($run)"
echo "WEIR_POSTGRES_DSN=postgres://weir@127.0.0.1:$port/weir?sslmode=disable"
