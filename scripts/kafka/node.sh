#!/usr/bin/env bash
# Fault injection on one node of the test cluster that
# `KAFKA_NODES=N bash scripts/kafka/start.sh` started (run-cluster/), for the
# reliability suite. Nodes are numbered 1..N, as their node.id.
#
#   node.sh pid N     print node N's pid (exit 1 if it is not running)
#   node.sh addr N    print its client address, 127.0.0.1:<port>
#   node.sh kill N    SIGKILL, and wait until the process is gone
#   node.sh term N    SIGTERM (a controlled shutdown), and wait until it
#                     exits; SIGKILL and exit 1 after KAFKA_STOP_TIMEOUT
#   node.sh start N   start it again on its existing config and data dir (no
#                     reformat) and wait until it serves; nothing if running.
#                     A start whose log stops growing for a minute, or
#                     that does not serve within the timeout, is reported
#                     (startup steps, log tail, jstack of a hung JVM in
#                     run-cluster/node<N>/threads-*.txt), killed and tried
#                     once more
#   node.sh stop N    SIGSTOP: frozen, its sockets stay open
#   node.sh cont N    SIGCONT: resume after stop
#
# "Serves" means: its client port is open and it logged "Kafka Server
# started", which it does once it has caught up with the cluster metadata and
# the controller has unfenced it. It may still be catching up as a follower,
# so it rejoins the ISR of its partitions a little later.
#
# start appends to run-cluster/node<N>/kafka.log and uses the heap options the
# cluster was started with. stop.sh stops all nodes, frozen ones included.
#
# Environment:
#   KAFKA_START_TIMEOUT  seconds to wait for each start attempt, default 300
#   KAFKA_STALL_TIMEOUT  seconds without a new log line after which a start
#                        attempt counts as hung, default 60
#   KAFKA_STOP_TIMEOUT   seconds to wait for term, default 30
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "kafka: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=cluster-lib.sh
source "$dir/cluster-lib.sh"

usage() { die "usage: node.sh pid|addr|kill|term|start|stop|cont N"; }
(($# == 2)) || usage
cmd=$1 n=$2
load_cluster || die "no cluster in $crun (start one with KAFKA_NODES=3 start.sh)"
[[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= nodes)) || die "no node $n: the cluster has nodes 1..$nodes"

pid=$(node_pid "$n")
up() { node_running "$n" "$pid"; }

# node_start_failed N PID OFFSET TIMEOUT: say how far node N's start got
# (its startup steps and last lines since byte OFFSET of its log), save the
# threads of a JVM that is still there (jstack) and print its metadata
# loader's stack, the thread a first metadata publish runs on; then kill it.
node_start_failed() {
  local n=$1 pid=$2 off=$3 nlog=$crun/node$1/kafka.log threads
  log "node $n did not start (exited, silent for ${stall}s or not ready after ${4}s); its startup steps and problems:"
  tail -c +$((off + 1)) "$nlog" | grep -E 'BrokerServer id=[0-9]+\] (Waiting|Finished waiting)|ERROR|FATAL' |
    tail -n 8 >&2 || true
  log "last lines of $nlog:"
  tail -n 15 "$nlog" >&2 || true
  if alive "$pid"; then
    threads=$crun/node$n/threads-$(date -u +%H%M%S).txt
    if jstack -l "$pid" >"$threads" 2>&1; then
      log "threads of the hung JVM in $threads; its metadata loader:"
      grep -A 30 -E '^"kafka-[0-9]+-metadata-loader-event-handler"' "$threads" >&2 || true
    fi
    kill -KILL "$pid" 2>/dev/null || true
    node_wait_exit "$n" "$pid" 10 || true
  fi
}

case $cmd in
pid)
  up || die "node $n is not running"
  echo "$pid"
  ;;
addr)
  node_addr "$n"
  ;;
kill)
  up || die "node $n is not running"
  kill -KILL "$pid"
  node_wait_exit "$n" "$pid" 10 || die "node $n (pid $pid) still there 10s after SIGKILL"
  log "node $n killed (pid $pid)"
  ;;
term)
  up || die "node $n is not running"
  timeout=${KAFKA_STOP_TIMEOUT:-30}
  started=$SECONDS
  kill -TERM "$pid"
  kill -CONT "$pid" 2>/dev/null || true # a frozen node would never see it
  if ! node_wait_exit "$n" "$pid" "$timeout"; then
    kill -KILL "$pid" 2>/dev/null || true
    node_wait_exit "$n" "$pid" 10 || true
    die "node $n (pid $pid) did not exit within ${timeout}s of SIGTERM; sent SIGKILL"
  fi
  log "node $n stopped in $((SECONDS - started))s (pid $pid)"
  ;;
start)
  if up; then
    log "node $n already running (pid $pid)"
    exit 0
  fi
  p=$(client_port "$n") cp=$(controller_port "$n")
  if port_open "$p" || port_open "$cp"; then
    die "port $p or $cp (node $n) is in use by something else"
  fi
  timeout=${KAFKA_START_TIMEOUT:-300} stall=${KAFKA_STALL_TIMEOUT:-60}
  # A start is given up when its log has not grown for $stall s (hung) or
  # after $timeout s in all — not while it makes progress: a broker
  # restarted after a SIGKILL first recovers every partition it holds
  # (805 took 42 s on a loaded machine, and a start killed halfway
  # through would recover them all again). A second attempt if the first
  # hangs, after the stuck JVM's threads are saved. (The CI failure first
  # taken for a hung broker was this script's own check: see node_started
  # in cluster-lib.sh.)
  for attempt in 1 2; do
    started=$SECONDS
    echo "[$(date -u '+%F %T')] node.sh: starting node $n again (attempt $attempt)" >>"$crun/node$n/kafka.log"
    node_launch "$n"
    pid=$launched_pid
    disown "$pid" # no "Killed" job notice if a hung attempt is killed
    size=0 grew=$SECONDS
    while ! node_started "$n" "$log_offset"; do
      now=$(stat -c %s "$crun/node$n/kafka.log" 2>/dev/null || echo 0)
      if ((now != size)); then size=$now grew=$SECONDS; fi
      if ! alive "$pid" || ((SECONDS - started >= timeout || SECONDS - grew >= stall)); then
        break
      fi
      sleep 0.5
    done
    if node_started "$n" "$log_offset"; then
      log "node $n serving again in $((SECONDS - started))s (pid $pid, $(node_addr "$n"), attempt $attempt)"
      exit 0
    fi
    node_start_failed "$n" "$pid" "$log_offset" "$((SECONDS - started))"
  done
  exit 1
  ;;
stop)
  up || die "node $n is not running"
  kill -STOP "$pid"
  log "node $n frozen (SIGSTOP, pid $pid)"
  ;;
cont)
  up || die "node $n is not running"
  kill -CONT "$pid"
  log "node $n resumed (SIGCONT, pid $pid)"
  ;;
*) usage ;;
esac
