#!/usr/bin/env bash
# Start one real Apache Kafka 4.4 node (KRaft, broker and controller in one
# JVM) on 127.0.0.1 for weir's real-broker tests, and wait until it serves.
# With KAFKA_NODES=N (N>1) start a cluster of N such nodes instead.
#
#   bash scripts/kafka/start.sh     # prints KAFKA_BROKERS=127.0.0.1:9092 last
#   bash scripts/kafka/stop.sh
#
# Idempotent: if the broker from a previous start is still up, it only prints
# the address again. Otherwise it starts from empty storage.
#
# Needs Java 17+ and Maven (the jars come from Maven Central through pom.xml
# into lib/, once). Everything the broker writes goes to run/ (gitignored):
# server.properties, _data/, kafka.log, kafka.pid. The log dir's leading
# underscore keeps `go list ./...` (and go test, go vet) from walking the
# topic directories the broker creates and deletes while the tests run: a
# directory deleted mid-walk failed the pattern ("open …-delete: no such
# file or directory").
#
# Environment:
#   KAFKA_PORT             client (PLAINTEXT) port, default 9092
#   KAFKA_CONTROLLER_PORT  KRaft controller port, default KAFKA_PORT+1
#   KAFKA_START_TIMEOUT    seconds to wait for the broker, default 90
#   KAFKA_HEAP_OPTS        default "-Xms256m -Xmx1g"
#   KAFKA_NODES            number of nodes, default 1 (the single node above)
#   KAFKA_EXTRA_PROPS      broker properties, one key=value a line, appended
#                          to every node's server.properties after the
#                          defaults below (a later line wins), e.g.
#                          KAFKA_EXTRA_PROPS='add.partitions.to.txn.retry.backoff.ms=1'
#                          (see docs/kafka.md, "Exactly-once latency and the
#                          broker"). Empty by default: the defaults unchanged.
#
# A cluster (KAFKA_NODES=N, N>1):
#
#   KAFKA_NODES=3 bash scripts/kafka/start.sh
#     # prints KAFKA_BROKERS=127.0.0.1:9192,127.0.0.1:9194,127.0.0.1:9196 last
#   bash scripts/kafka/node.sh kill 2    # fault injection, see node.sh
#   bash scripts/kafka/stop.sh           # stops the single node and the cluster
#
# N JVMs, node ids 1..N, each broker and controller (process.roles=
# broker,controller) in a dynamic KRaft quorum of all N, formatted with
# --initial-controllers. Ports, consecutive from KAFKA_PORT (default 9192 for
# a cluster, so it can run next to a single node on 9092):
#
#   node i: client port     KAFKA_PORT + 2*(i-1)
#           controller port KAFKA_PORT + 2*(i-1) + 1
#
# (KAFKA_CONTROLLER_PORT is ignored.) Replication: default.replication.factor
# N, internal topics (offsets, transactions, share state) replicated min(N,3)
# times, min.insync.replicas and the internal topics' min ISR 2 (1 when N=2),
# unclean.leader.election.enable=false. Files go to run-cluster/node<i>/
# (gitignored; layout in cluster-lib.sh). KAFKA_HEAP_OPTS defaults to
# "-Xms128m -Xmx512m" per node (RSS about 310-370 MB idle, 410-460 MB after
# a million records). It waits until every node has started and all N
# brokers answer, then prints KAFKA_BROKERS with all N addresses. Idempotent
# as above; a cluster with a node down (node.sh kill) is not restarted: use
# node.sh start or stop.sh.
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$dir/lib
run=$dir/run
port=${KAFKA_PORT:-9092}
cport=${KAFKA_CONTROLLER_PORT:-$((port + 1))}
timeout=${KAFKA_START_TIMEOUT:-90}
heap=${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
brokers=127.0.0.1:$port
nodes=${KAFKA_NODES:-1}

log() { echo "kafka: $*" >&2; }
die() { log "$*"; exit 1; }

[[ $nodes =~ ^[1-9][0-9]*$ ]] || die "KAFKA_NODES must be a positive integer, not '$nodes'"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# running PID: true if PID is alive and is our broker (guards against a
# recycled pid from an old pid file).
running() {
  [[ -n $1 ]] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "kafka.Kafka $run/server.properties"
}

# kafka_tool CLASS ARGS...: a Kafka command-line tool from lib/, quiet logs.
kafka_tool() {
  "$java" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dweir.kafka.log.level=WARN \
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$lib/*" "$@"
}

# resolve_jars: the jars in lib/, resolved once per pom.xml.
resolve_jars() {
  stamp=$(sha256sum "$dir/pom.xml" | cut -d' ' -f1)
  if [[ ! -f $lib/.pom-sha256 || $(cat "$lib/.pom-sha256") != "$stamp" ]]; then
    command -v mvn >/dev/null || die "mvn not found (needed once to fetch the Kafka jars)"
    log "resolving Kafka jars with Maven into $lib"
    rm -rf "$lib"
    started=$SECONDS
    # All of it to stderr: this script's stdout is only the KAFKA_BROKERS line.
    # The sed drops the stray ANSI resets that Debian's Maven 3.8 prints even
    # in batch mode.
    mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" \
      dependency:copy-dependencies -DoutputDirectory="$lib" 2>&1 |
      sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2
    echo "$stamp" >"$lib/.pom-sha256"
    log "jars resolved in $((SECONDS - started))s"
  fi
}

# extra_props: KAFKA_EXTRA_PROPS under a heading, nothing when it is empty.
# Kafka reads server.properties with java.util.Properties: the last line of
# a key wins, so these override the defaults written above them.
extra_props() {
  [[ -n ${KAFKA_EXTRA_PROPS:-} ]] || return 0
  echo
  echo "# KAFKA_EXTRA_PROPS"
  printf '%s\n' "$KAFKA_EXTRA_PROPS"
}

# kafka_uuid: a random Kafka Uuid (16 bytes, URL-safe base64 without padding,
# not starting with "-"), like StorageTool random-uuid but without a JVM.
kafka_uuid() {
  local u
  while u=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '='); [[ $u == -* ]]; do :; done
  echo "$u"
}

# start_cluster: KAFKA_NODES>1. Same steps as the single node below, for N
# nodes in run-cluster/.
start_cluster() {
  # shellcheck source=cluster-lib.sh
  source "$dir/cluster-lib.sh"
  local want=$nodes i up p cp nd voters= bootstrap= minisr irf pids=() offsets=()
  port=${KAFKA_PORT:-9192}
  heap=${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m}
  [[ -z ${KAFKA_CONTROLLER_PORT:-} ]] ||
    log "KAFKA_CONTROLLER_PORT is ignored with KAFKA_NODES=$want: node i's controller port is its client port + 1"

  # --- Already running? ----------------------------------------------------
  if [[ -f $crun/cluster.env ]]; then
    local want_port=$port want_heap=$heap
    load_cluster
    up=0
    for ((i = 1; i <= nodes; i++)); do
      if node_running "$i"; then ((++up)); fi
    done
    if ((up > 0)); then
      local have
      have=$(cluster_brokers)
      ((up == nodes)) ||
        die "a cluster of $nodes nodes on $have is running with $((nodes - up)) down; use node.sh start N, or stop.sh first"
      [[ $nodes == "$want" && $port == "$want_port" ]] ||
        die "a cluster of $nodes nodes on $have is already running; run stop.sh first to start $want nodes from port $want_port"
      for ((i = 1; i <= nodes; i++)); do
        ! node_stopped "$i" || log "note: node $i is stopped (SIGSTOP); node.sh cont $i resumes it"
      done
      log "already running ($nodes nodes)"
      echo "KAFKA_BROKERS=$have"
      exit 0
    fi
    nodes=$want port=$want_port heap=$want_heap
  fi

  command -v "$java" >/dev/null || die "java not found (Kafka 4.4 needs Java 17+)"
  for ((i = 1; i <= nodes; i++)); do
    p=$(client_port "$i") cp=$(controller_port "$i")
    if port_open "$p" || port_open "$cp"; then
      die "port $p or $cp (node $i) is already in use by something else"
    fi
  done

  resolve_jars

  # --- Fresh config and storage --------------------------------------------
  rm -rf "$crun"
  mkdir -p "$crun"
  {
    echo "# Written by scripts/kafka/start.sh; read by node.sh and stop.sh."
    printf 'nodes=%q\nport=%q\nheap=%q\n' "$nodes" "$port" "$heap"
  } >"$crun/cluster.env"
  printf 'request.timeout.ms=5000\ndefault.api.timeout.ms=10000\n' >"$crun/admin.properties"

  if ((nodes >= 3)); then minisr=2 irf=3; else minisr=1 irf=$nodes; fi
  for ((i = 1; i <= nodes; i++)); do
    cp=$(controller_port "$i")
    voters+=${voters:+,}$i@127.0.0.1:$cp:$(kafka_uuid)
    bootstrap+=${bootstrap:+,}127.0.0.1:$cp
  done

  for ((i = 1; i <= nodes; i++)); do
    nd=$crun/node$i p=$(client_port "$i") cp=$(controller_port "$i")
    mkdir -p "$nd/_data"
    cat >"$nd/server.properties" <<PROPS
# Written by scripts/kafka/start.sh: node $i of a $nodes-node test cluster,
# broker and controller in one JVM.
process.roles=broker,controller
node.id=$i
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$cp
advertised.listeners=PLAINTEXT://127.0.0.1:$p
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
# Dynamic KRaft quorum of all $nodes nodes, formatted with --initial-controllers.
controller.quorum.bootstrap.servers=$bootstrap
log.dirs=$nd/_data

# Replication: every topic on all $nodes nodes by default, acks=all needs
# $minisr in sync, and an out-of-sync replica never becomes leader.
num.partitions=1
default.replication.factor=$nodes
min.insync.replicas=$minisr
unclean.leader.election.enable=false
offsets.topic.replication.factor=$irf
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=$irf
transaction.state.log.min.isr=$minisr
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=$irf
share.coordinator.state.topic.min.isr=$minisr
group.initial.rebalance.delay.ms=0
# Let tests use short session timeouts (default minimum is 6 s).
group.min.session.timeout.ms=1000
auto.create.topics.enable=true
delete.topic.enable=true

# Small segments; retention by size only (see the single node in start.sh).
log.segment.bytes=16777216
log.retention.ms=-1
log.retention.bytes=268435456
log.retention.check.interval.ms=60000
PROPS
    extra_props >>"$nd/server.properties"
  done

  "$java" -version 2>&1 | head -1 >&2
  local cluster_id failed=0
  cluster_id=$(kafka_uuid)
  # One StorageTool per node, in parallel: the same --initial-controllers
  # for all, each finds its own directory id in it by node.id.
  for ((i = 1; i <= nodes; i++)); do
    kafka_tool kafka.tools.StorageTool format --cluster-id "$cluster_id" \
      --initial-controllers "$voters" --config "$crun/node$i/server.properties" \
      >"$crun/node$i/format.log" 2>&1 &
    pids[i]=$!
  done
  for ((i = 1; i <= nodes; i++)); do
    if ! wait "${pids[i]}"; then
      cat "$crun/node$i/format.log" >&2
      failed=1
    fi
  done
  ((failed == 0)) || die "formatting KRaft storage failed"

  # --- Start -----------------------------------------------------------------
  local started=$SECONDS
  for ((i = 1; i <= nodes; i++)); do
    node_launch "$i"
    pids[i]=$launched_pid offsets[i]=$log_offset
    log "started node $i pid $launched_pid on $(node_addr "$i"), log $crun/node$i/kafka.log"
  done

  cluster_fail() {
    local j
    log "$*; last lines of the nodes' logs:"
    for ((j = 1; j <= nodes; j++)); do
      log "--- node $j: $crun/node$j/kafka.log"
      tail -n 20 "$crun/node$j/kafka.log" >&2 || true
    done
    for ((j = 1; j <= nodes; j++)); do kill -KILL "${pids[j]}" 2>/dev/null || true; done
    exit 1
  }

  # Ready = every node logged its start and all N brokers answer ApiVersions
  # (so all N are registered and unfenced in the cluster's metadata).
  local all ready have
  all=$(cluster_brokers)
  while :; do
    ready=0
    for ((i = 1; i <= nodes; i++)); do
      alive "${pids[i]}" || cluster_fail "node $i exited during startup"
      if node_started "$i" "${offsets[i]}"; then ((++ready)); fi
    done
    ((SECONDS - started < timeout)) || cluster_fail "not ready after ${timeout}s ($ready of $nodes nodes started)"
    if ((ready == nodes)); then
      have=$(registered_brokers "$all" | wc -l)
      ((have == nodes)) && break
    fi
    sleep 1
  done

  # The version from the jar's name: one JVM less than kafka.Kafka --version.
  local jars=("$lib"/kafka-server-[0-9]*.jar) version
  version=${jars[0]##*/kafka-server-} version=${version%.jar}
  log "ready in $((SECONDS - started))s: $nodes nodes of Apache Kafka $version"
  echo "KAFKA_BROKERS=$all"
}

# --- A cluster (KAFKA_NODES>1): its own function, run-cluster/ -------------
if ((nodes > 1)); then
  start_cluster
  exit
fi

# --- Already running? ------------------------------------------------------
if [[ -f $run/kafka.pid ]] && running "$(cat "$run/kafka.pid")"; then
  have=$(sed -n 's|^advertised.listeners=PLAINTEXT://||p' "$run/server.properties")
  [[ $have == "$brokers" ]] ||
    die "a broker on $have is already running; run stop.sh first to move it to $brokers"
  log "already running (pid $(cat "$run/kafka.pid"))"
  echo "KAFKA_BROKERS=$brokers"
  exit 0
fi

command -v "$java" >/dev/null || die "java not found (Kafka 4.4 needs Java 17+)"
if port_open "$port" || port_open "$cport"; then
  die "port $port or $cport is already in use by something else"
fi

# --- Jars: resolve once per pom.xml ----------------------------------------
resolve_jars

# --- Fresh config and storage ----------------------------------------------
rm -rf "$run"
mkdir -p "$run/_data"

cat >"$run/server.properties" <<EOF
# Written by scripts/kafka/start.sh: one combined broker+controller for tests.
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
# Dynamic KRaft quorum of one, formatted with --standalone.
controller.quorum.bootstrap.servers=127.0.0.1:$cport
log.dirs=$run/_data

# Transactions and groups on a single node.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=10
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Let tests use short session timeouts (default minimum is 6 s).
group.min.session.timeout.ms=1000
auto.create.topics.enable=true
delete.topic.enable=true

# Small segments; retention by size only. Time retention is off on purpose:
# it compares against record timestamps, and tests that produce records with
# fixed old event times (1970, 2020, ...) would see them deleted.
log.segment.bytes=16777216
log.retention.ms=-1
log.retention.bytes=268435456
log.retention.check.interval.ms=60000
EOF
extra_props >>"$run/server.properties"

"$java" -version 2>&1 | head -1 >&2
cluster_id=$(kafka_tool kafka.tools.StorageTool random-uuid)
kafka_tool kafka.tools.StorageTool format --standalone \
  --cluster-id "$cluster_id" --config "$run/server.properties" >"$run/format.log" 2>&1 ||
  { cat "$run/format.log" >&2; die "formatting KRaft storage failed"; }

# --- Start -----------------------------------------------------------------
started=$SECONDS
# shellcheck disable=SC2086 # $heap is a list of JVM options
setsid "$java" $heap -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
  -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
  -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$dir/log4j2.yaml" \
  -cp "$lib/*" kafka.Kafka "$run/server.properties" \
  </dev/null >"$run/kafka.log" 2>&1 &
pid=$!
echo "$pid" >"$run/kafka.pid"
log "started pid $pid, log $run/kafka.log"

# alive PID: our own child, not yet exited. Not running(): right after the
# fork the child may not have exec'd java yet, so its command line is still
# this script's. Not kill -0 either: a dead child stays a zombie until we exit.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

fail() {
  log "$*; last lines of $run/kafka.log:"
  tail -n 40 "$run/kafka.log" >&2 || true
  kill -KILL "$pid" 2>/dev/null || true
  exit 1
}

# Ready = the broker logged its start and a real Admin client can list topics.
printf 'request.timeout.ms=5000\ndefault.api.timeout.ms=10000\n' >"$run/admin.properties"
while :; do
  alive "$pid" || fail "broker exited during startup"
  ((SECONDS - started < timeout)) || fail "not ready after ${timeout}s"
  if port_open "$port" && grep -q 'Kafka Server started' "$run/kafka.log" &&
    kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$brokers" \
      --command-config "$run/admin.properties" --list >/dev/null 2>&1; then
    break
  fi
  sleep 1
done

log "ready in $((SECONDS - started))s: Apache Kafka $(kafka_tool kafka.Kafka --version 2>/dev/null | head -1)"
echo "KAFKA_BROKERS=$brokers"
