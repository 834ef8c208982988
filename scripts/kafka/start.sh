#!/usr/bin/env bash
# Start one real Apache Kafka 4.4 node (KRaft, broker and controller in one
# JVM) on 127.0.0.1 for weir's real-broker tests, and wait until it serves.
#
#   bash scripts/kafka/start.sh     # prints KAFKA_BROKERS=127.0.0.1:9092 last
#   bash scripts/kafka/stop.sh
#
# Idempotent: if the broker from a previous start is still up, it only prints
# the address again. Otherwise it starts from empty storage.
#
# Needs Java 17+ and Maven (the jars come from Maven Central through pom.xml
# into lib/, once). Everything the broker writes goes to run/ (gitignored):
# server.properties, data/, kafka.log, kafka.pid.
#
# Environment:
#   KAFKA_PORT             client (PLAINTEXT) port, default 9092
#   KAFKA_CONTROLLER_PORT  KRaft controller port, default KAFKA_PORT+1
#   KAFKA_START_TIMEOUT    seconds to wait for the broker, default 90
#   KAFKA_HEAP_OPTS        default "-Xms256m -Xmx1g"
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

log() { echo "kafka: $*" >&2; }
die() { log "$*"; exit 1; }

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

# --- Fresh config and storage ----------------------------------------------
rm -rf "$run"
mkdir -p "$run/data"

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
log.dirs=$run/data

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
