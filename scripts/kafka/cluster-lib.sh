# shellcheck shell=bash
# Helpers for the multi-node test cluster, sourced by start.sh (KAFKA_NODES>1),
# stop.sh and node.sh. Not a command of its own.
#
# The caller sets $dir (scripts/kafka) and defines log and die. Layout of
# run-cluster/ (gitignored, separate from the single node's run/):
#
#   cluster.env                  nodes, port and heap of the cluster (sourced)
#   admin.properties             client settings for the readiness probes
#   node<i>/server.properties    node i's config (node.id=i)
#   node<i>/_data/               its log dir (KRaft metadata and topics;
#                                "_": not walked by go list ./...)
#   node<i>/kafka.log            its stdout and stderr, appended on restart
#   node<i>/kafka.pid            its pid
#   node<i>/format.log           StorageTool's output
#
# Ports: node i listens for clients on port+2*(i-1) and for the KRaft
# controller on port+2*(i-1)+1, all on 127.0.0.1.

crun=$dir/run-cluster
lib=$dir/lib
java=${JAVA_HOME:+$JAVA_HOME/bin/}java

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# kafka_tool CLASS ARGS...: a Kafka command-line tool from lib/, quiet logs.
kafka_tool() {
  "$java" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dweir.kafka.log.level=WARN \
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$lib/*" "$@"
}

client_port() { echo $((port + 2 * ($1 - 1))); }
controller_port() { echo $((port + 2 * ($1 - 1) + 1)); }
node_addr() { echo "127.0.0.1:$(client_port "$1")"; }

# cluster_brokers: host:port of every node, comma-separated.
cluster_brokers() {
  local i out=
  for ((i = 1; i <= nodes; i++)); do out+=${out:+,}$(node_addr "$i"); done
  echo "$out"
}

# load_cluster: sets nodes, port and heap from run-cluster/cluster.env.
load_cluster() {
  [[ -f $crun/cluster.env ]] || return 1
  # shellcheck source=/dev/null
  source "$crun/cluster.env"
}

node_pid() { cat "$crun/node$1/kafka.pid" 2>/dev/null || true; }

# node_running I [PID]: true if node I's pid is alive and is that node's
# broker (guards against a recycled pid from an old pid file). A stopped
# (SIGSTOP) node counts as running; a zombie does not.
node_running() {
  local pid=${2-$(node_pid "$1")}
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
    grep -q "kafka.Kafka $crun/node$1/server.properties"
}

# node_stopped I: true if node I is running but stopped by SIGSTOP.
node_stopped() {
  local pid state
  pid=$(node_pid "$1")
  node_running "$1" "$pid" || return 1
  state=$(ps -o stat= -p "$pid" 2>/dev/null) && [[ $state == T* ]]
}

# node_launch I: start node I's JVM on its existing config and data, in the
# background, appending to its kafka.log. Sets launched_pid and log_offset
# (the log's size before this start, for node_started).
node_launch() {
  local nd=$crun/node$1
  log_offset=$(stat -c %s "$nd/kafka.log" 2>/dev/null || echo 0)
  # shellcheck disable=SC2086 # $heap is a list of JVM options
  setsid "$java" $heap -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
    -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" \
    -cp "$lib/*" kafka.Kafka "$nd/server.properties" \
    </dev/null >>"$nd/kafka.log" 2>&1 &
  launched_pid=$!
  echo "$launched_pid" >"$nd/kafka.pid"
}

# alive PID: our own child, not yet exited. Not node_running(): right after
# the fork the child may not have exec'd java yet, so its command line is
# still the script's. Not kill -0 either: a dead child stays a zombie until
# we exit.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

# node_started I OFFSET: node I's client port is open and it logged
# "Kafka Server started" after byte OFFSET of its kafka.log (it logs that
# once it has caught up with the metadata and the controller unfenced it).
# Not `tail | grep -q`: under pipefail that pipeline fails when grep quits
# at the match while tail still writes (SIGPIPE, status 141), which a
# restart's log of more than a pipe's 64 KiB made certain — a node that
# had started was taken for one that had not (the CI failure of the
# cluster suite, "did not start … after 90s").
node_started() {
  port_open "$(client_port "$1")" &&
    grep -qF 'Kafka Server started' < <(tail -c +$(($2 + 1)) "$crun/node$1/kafka.log" 2>/dev/null)
}

# registered_brokers BOOTSTRAP: the ids of the brokers that answer an
# ApiVersions request, one a line, from the metadata that BOOTSTRAP serves.
registered_brokers() {
  kafka_tool org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$1" \
    --command-config "$crun/admin.properties" 2>/dev/null |
    sed -n 's/^[^ ]* (id: \([0-9]*\) .*) -> ($/\1/p' | sort -n
}

# node_wait_exit I PID TIMEOUT: wait up to TIMEOUT seconds for PID (node I)
# to exit; false if it is still running.
node_wait_exit() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    node_running "$1" "$2" || return 0
    sleep 0.1
  done
  ! node_running "$1" "$2"
}
