#!/usr/bin/env bash
# Stop the broker that scripts/kafka/start.sh started and delete run/
# (its config, data and log). Safe to run when nothing is running.
#
# Environment:
#   KAFKA_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL, default 30
#   KAFKA_KEEP_RUN=1    keep run/ (for reading kafka.log after a failure)
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=$dir/run
timeout=${KAFKA_STOP_TIMEOUT:-30}

log() { echo "kafka: $*" >&2; }

# Only signal the pid if it is still our broker (pid files outlive processes).
running() {
  [[ -n $1 ]] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "kafka.Kafka $run/server.properties"
}

pid=$(cat "$run/kafka.pid" 2>/dev/null || true)
if running "$pid"; then
  log "stopping pid $pid"
  kill -TERM "$pid"
  for ((i = 0; i < timeout * 10; i++)); do
    running "$pid" || break
    sleep 0.1
  done
  if running "$pid"; then
    log "still running after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      running "$pid" || break
      sleep 0.1
    done
  fi
  log "stopped"
else
  log "not running"
fi

if [[ ${KAFKA_KEEP_RUN:-} != 1 ]]; then
  rm -rf "$run"
fi
