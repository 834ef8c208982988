#!/usr/bin/env bash
# Stop the broker that scripts/kafka/start.sh started and delete run/
# (its config, data and log), and the same for a cluster (KAFKA_NODES>1):
# every node in run-cluster/, then run-cluster/, and for the secured node of
# start-secure.sh (run-secure/). Safe to run when nothing is running.
#
#   bash scripts/kafka/stop.sh            # the single node, the cluster, the secured node
#   bash scripts/kafka/stop.sh single     # only the single node (run/)
#   bash scripts/kafka/stop.sh cluster    # only the cluster (run-cluster/)
#   bash scripts/kafka/stop.sh secure     # only the secured node (run-secure/)
#
# Environment:
#   KAFKA_STOP_TIMEOUT  seconds to wait after SIGTERM before SIGKILL, default 30
#   KAFKA_KEEP_RUN=1    keep run/, run-cluster/ and run-secure/ (for reading
#                       kafka.log after a failure)
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=$dir/run
timeout=${KAFKA_STOP_TIMEOUT:-30}
what=${1:-all}

log() { echo "kafka: $*" >&2; }
die() { log "$*"; exit 1; }

case $what in
all | single | cluster | secure) ;;
*) die "usage: stop.sh [all|single|cluster|secure]" ;;
esac

# Only signal the pid if it is still our broker (pid files outlive processes).
running() {
  [[ -n $1 ]] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "kafka.Kafka $run/server.properties"
}

stop_single() {
  local pid i run=${1:-$run} name=${2:-}
  pid=$(cat "$run/kafka.pid" 2>/dev/null || true)
  if running "$pid"; then
    log "stopping ${name}pid $pid"
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
    log "${name}stopped"
  else
    log "${name}not running"
  fi

  if [[ ${KAFKA_KEEP_RUN:-} != 1 ]]; then
    rm -rf "$run"
  fi
}

# stop_cluster: SIGTERM to all nodes at once (each does a controlled
# shutdown while the quorum is still there), SIGKILL after the timeout.
stop_cluster() {
  # shellcheck source=cluster-lib.sh
  source "$dir/cluster-lib.sh"
  local i pid up=() nodes
  nodes=0
  while [[ -d $crun/node$((nodes + 1)) ]]; do ((++nodes)); done
  for ((i = 1; i <= nodes; i++)); do
    pid=$(node_pid "$i")
    if node_running "$i" "$pid"; then
      up[i]=$pid
      kill -TERM "$pid"
      kill -CONT "$pid" 2>/dev/null || true # in case node.sh stop froze it
    fi
  done
  if ((${#up[@]} > 0)); then
    log "stopping cluster nodes ${!up[*]} (pids ${up[*]})"
    local deadline=$((SECONDS + timeout))
    for i in "${!up[@]}"; do
      node_wait_exit "$i" "${up[i]}" $((deadline > SECONDS ? deadline - SECONDS : 0)) && continue
      log "node $i still running after ${timeout}s, sending SIGKILL"
      kill -KILL "${up[i]}" 2>/dev/null || true
      node_wait_exit "$i" "${up[i]}" 5 || true
    done
    log "cluster stopped"
  else
    log "cluster not running"
  fi

  if [[ ${KAFKA_KEEP_RUN:-} != 1 ]]; then
    rm -rf "$crun"
  fi
}

if [[ $what == all || $what == single ]]; then stop_single; fi
if [[ $what == secure || ($what == all && -d $dir/run-secure) ]]; then stop_single "$dir/run-secure" "secured node "; fi
if [[ $what == cluster || ($what == all && -d $dir/run-cluster) ]]; then stop_cluster; fi
