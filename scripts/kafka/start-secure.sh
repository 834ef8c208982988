#!/usr/bin/env bash
# Start a secured single-node Apache Kafka 4.4 (KRaft) for weir's security
# tests, next to the plain one of start.sh, and wait until it serves.
#
#   bash scripts/kafka/start-secure.sh   # prints env-style lines, see below
#   bash scripts/kafka/stop.sh secure
#
# Listeners (all on 127.0.0.1):
#
#   KAFKA_SECURE_PORT     (9292)  SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
#   KAFKA_SECURE_PORT+1   (9293)  SSL with client certificates required (mTLS);
#                                 also the inter-broker listener
#   KAFKA_SECURE_PORT+2   (9294)  the KRaft controller, SSL with client
#                                 certificates (the broker's own), internal
#   KAFKA_SECURE_PORT+3   (9295)  SSL, server-verified only: no client
#                                 certificate asked for; the principal is
#                                 User:ANONYMOUS
#
# Certificates are made at every start with the JDK's keytool: a CA, the
# broker's certificate (SAN 127.0.0.1, localhost) and a client certificate
# (CN=weir-client) signed by it; openssl turns the client's PKCS#12 into PEM
# for Go. Principals: SASL users are User:<name>; a certificate's is
# User:<its CN> (ssl.principal.mapping.rules).
#
# Users: admin (super user: PLAIN and SCRAM-SHA-512), weir (PLAIN,
# SCRAM-SHA-256, SCRAM-SHA-512), and the broker (User:broker, its
# certificate). The SCRAM credentials are written into the metadata at
# format time (kafka-storage format --add-scram); tests add more users with
# the admin API (AlterUserScramCredentials). Authorization: the KRaft
# StandardAuthorizer with allow.everyone.if.no.acl.found=false, super users
# admin and broker; no ACLs at start, so weir can do nothing until granted.
#
# Printed last, on stdout, one per line:
#
#   KAFKA_SASL_SSL_BROKERS=127.0.0.1:9292
#   KAFKA_SSL_BROKERS=127.0.0.1:9293
#   KAFKA_TLS_BROKERS=127.0.0.1:9295
#   KAFKA_TLS_CA=<run-secure>/ca.pem
#   KAFKA_TLS_CERT=<run-secure>/client.pem   KAFKA_TLS_KEY=<run-secure>/client.key
#   KAFKA_TLS_EXPIRED_CERT=<run-secure>/expired.pem   KAFKA_TLS_EXPIRED_KEY=...
#     (a client certificate of the CA that expired 30 days ago)
#   KAFKA_ADMIN_USER=admin   KAFKA_ADMIN_PASSWORD=...
#   KAFKA_SASL_USER=weir     KAFKA_SASL_PASSWORD=...
#
# (each on its own line), also written to run-secure/secure.env, so
# `set -a; source scripts/kafka/run-secure/secure.env; set +a` sets them for
# `go test -run TestSecured ./tests`. Idempotent: if it is already running, it
# prints them again. Files: run-secure/ (gitignored).
#
# Environment:
#   KAFKA_SECURE_PORT    first port, default 9292 (uses it and the next three)
#   KAFKA_START_TIMEOUT  seconds to wait for the broker, default 90
#   KAFKA_SECURE_HEAP    default "-Xms128m -Xmx384m"
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$dir/lib
run=$dir/run-secure
port=${KAFKA_SECURE_PORT:-9292}
sslport=$((port + 1))
cport=$((port + 2))
tlsport=$((port + 3))
timeout=${KAFKA_START_TIMEOUT:-90}
heap=${KAFKA_SECURE_HEAP:--Xms128m -Xmx384m}
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
keytool=${JAVA_HOME:+$JAVA_HOME/bin/}keytool

log() { echo "kafka-secure: $*" >&2; }
die() { log "$*"; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running() {
  [[ -n $1 ]] && kill -0 "$1" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "kafka.Kafka $run/server.properties"
}

kafka_tool() {
  "$java" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dweir.kafka.log.level=WARN \
    -Dlog4j2.configurationFile="$dir/log4j2.yaml" -cp "$lib/*" "$@"
}

# --- Already running? ------------------------------------------------------
if [[ -f $run/kafka.pid && -f $run/secure.env ]] && running "$(cat "$run/kafka.pid")"; then
  log "already running (pid $(cat "$run/kafka.pid"))"
  cat "$run/secure.env"
  exit 0
fi

command -v "$java" >/dev/null || die "java not found (Kafka 4.4 needs Java 17+)"
command -v "$keytool" >/dev/null || die "keytool not found (it comes with the JDK)"
command -v openssl >/dev/null || die "openssl not found (it turns the client key into PEM)"
for p in "$port" "$sslport" "$cport" "$tlsport"; do
  ! port_open "$p" || die "port $p is already in use by something else"
done

# --- Jars: the same lib/ as start.sh, resolved by it ------------------------
if [[ ! -f $lib/.pom-sha256 || $(cat "$lib/.pom-sha256") != $(sha256sum "$dir/pom.xml" | cut -d' ' -f1) ]]; then
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the Kafka jars)"
  log "resolving Kafka jars with Maven into $lib"
  rm -rf "$lib"
  mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" \
    dependency:copy-dependencies -DoutputDirectory="$lib" 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2
  sha256sum "$dir/pom.xml" | cut -d' ' -f1 >"$lib/.pom-sha256"
fi

rm -rf "$run"
mkdir -p "$run/_data" "$run/tls"
chmod 700 "$run"

secret() { head -c 18 /dev/urandom | base64 | tr '+/' 'xy'; }
storepass=$(secret)
admin_pw=$(secret)
weir_pw=$(secret)

# --- Certificates (keytool) ------------------------------------------------
t=$run/tls
# keytool is a JVM per call: a quick-starting one.
kt() {
  "$keytool" -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC -J-Xshare:auto -noprompt \
    -storetype PKCS12 -storepass "$storepass" "$@" >"$t/keytool.log" 2>&1 ||
    { cat "$t/keytool.log" >&2; die "keytool $1 failed"; }
}
started=$SECONDS
kt -genkeypair -alias ca -keyalg EC -groupname secp256r1 -validity 30 \
  -dname "CN=weir-test-ca" -ext bc:c -keystore "$t/ca.p12"
kt -exportcert -rfc -alias ca -keystore "$t/ca.p12" -file "$run/ca.pem"
kt -importcert -alias ca -file "$run/ca.pem" -keystore "$t/truststore.p12"
# sign NAME DNAME [SAN]: NAME.p12 holds a key and its CA-signed chain.
sign() {
  local name=$1 dname=$2 san=${3:-}
  kt -genkeypair -alias "$name" -keyalg EC -groupname secp256r1 -validity 30 \
    -dname "$dname" -keystore "$t/$name.p12"
  kt -certreq -alias "$name" -keystore "$t/$name.p12" -file "$t/$name.csr"
  kt -gencert -alias ca -keystore "$t/ca.p12" -infile "$t/$name.csr" -outfile "$t/$name.crt" \
    -rfc -validity 30 ${san:+-ext "SAN=$san"} -ext "KU=digitalSignature" -ext "EKU=serverAuth,clientAuth"
  kt -importcert -alias ca -file "$run/ca.pem" -keystore "$t/$name.p12"
  kt -importcert -alias "$name" -file "$t/$name.crt" -keystore "$t/$name.p12"
}
sign broker "CN=broker" "ip:127.0.0.1,dns:localhost"
sign weir-client "CN=weir-client"
cp "$t/weir-client.crt" "$run/client.pem"
openssl pkcs12 -in "$t/weir-client.p12" -nocerts -nodes -passin "pass:$storepass" 2>/dev/null |
  openssl pkey -out "$run/client.key"
[[ -s $run/client.key ]] || die "could not extract the client key"
chmod 600 "$run/client.key"
# An expired client certificate (valid from 60 to 30 days ago), signed by
# the CA, for the refusal test.
kt -genkeypair -alias expired -keyalg EC -groupname secp256r1 -validity 30 \
  -dname "CN=weir-expired" -keystore "$t/expired.p12"
kt -certreq -alias expired -keystore "$t/expired.p12" -file "$t/expired.csr"
kt -gencert -alias ca -keystore "$t/ca.p12" -infile "$t/expired.csr" -outfile "$run/expired.pem" \
  -rfc -startdate -60d -validity 30 -ext "KU=digitalSignature" -ext "EKU=clientAuth"
openssl pkcs12 -in "$t/expired.p12" -nocerts -nodes -passin "pass:$storepass" 2>/dev/null |
  openssl pkey -out "$run/expired.key"
[[ -s $run/expired.key ]] || die "could not extract the expired client key"
chmod 600 "$run/expired.key"
log "certificates made in $((SECONDS - started))s"

# --- Config ----------------------------------------------------------------
cat >"$run/server.properties" <<EOF
# Written by scripts/kafka/start-secure.sh: a secured combined
# broker+controller for weir's security tests.
process.roles=broker,controller
node.id=1
listeners=SASL_SSL://127.0.0.1:$port,SSL://127.0.0.1:$sslport,CONTROLLER://127.0.0.1:$cport,TLS://127.0.0.1:$tlsport
advertised.listeners=SASL_SSL://127.0.0.1:$port,SSL://127.0.0.1:$sslport,TLS://127.0.0.1:$tlsport
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:SSL,TLS:SSL
inter.broker.listener.name=SSL
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=127.0.0.1:$cport
log.dirs=$run/_data

# TLS: the broker's key and the CA the listeners trust for client
# certificates. The SSL and controller listeners require one (mTLS); the
# SASL_SSL listener authenticates by SASL; the TLS listener asks for none
# (server-verified TLS: its clients are User:ANONYMOUS).
ssl.keystore.type=PKCS12
ssl.keystore.location=$t/broker.p12
ssl.keystore.password=$storepass
ssl.truststore.type=PKCS12
ssl.truststore.location=$t/truststore.p12
ssl.truststore.password=$storepass
ssl.client.auth=required
listener.name.sasl_ssl.ssl.client.auth=none
listener.name.tls.ssl.client.auth=none
ssl.endpoint.identification.algorithm=https
# A certificate's principal is User:<its CN>.
ssl.principal.mapping.rules=RULE:^CN=([^,]+).*\$/\$1/,DEFAULT

# SASL on SASL_SSL: PLAIN users in the JAAS line, SCRAM users in the metadata.
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="$admin_pw" user_weir="$weir_pw";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;

# ACLs: nothing is allowed that no ACL allows; admin and the broker itself
# are super users.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:broker

# Transactions and groups on a single node (as start.sh).
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
auto.create.topics.enable=false
delete.topic.enable=true
log.segment.bytes=16777216
log.retention.ms=-1
log.retention.bytes=268435456
EOF

# Client configs for the Kafka tools (readiness probe, debugging).
cat >"$run/admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$admin_pw";
ssl.truststore.type=PEM
ssl.truststore.location=$run/ca.pem
request.timeout.ms=5000
default.api.timeout.ms=10000
EOF
chmod 600 "$run/admin.properties" "$run/server.properties"

"$java" -version 2>&1 | head -1 >&2
cluster_id=$(kafka_tool kafka.tools.StorageTool random-uuid)
kafka_tool kafka.tools.StorageTool format --standalone \
  --cluster-id "$cluster_id" --config "$run/server.properties" \
  --add-scram "SCRAM-SHA-512=[name=admin,password=$admin_pw]" \
  --add-scram "SCRAM-SHA-256=[name=weir,password=$weir_pw]" \
  --add-scram "SCRAM-SHA-512=[name=weir,password=$weir_pw]" \
  >"$run/format.log" 2>&1 ||
  { cat "$run/format.log" >&2; die "formatting KRaft storage failed"; }

# --- Start -----------------------------------------------------------------
started=$SECONDS
# shellcheck disable=SC2086 # $heap is a list of JVM options
setsid "$java" $heap -server -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$dir/log4j2.yaml" \
  -cp "$lib/*" kafka.Kafka "$run/server.properties" \
  </dev/null >"$run/kafka.log" 2>&1 &
pid=$!
echo "$pid" >"$run/kafka.pid"
log "started pid $pid, log $run/kafka.log"

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

# Ready = the broker logged its start and the admin lists topics over SASL_SSL.
while :; do
  alive "$pid" || fail "broker exited during startup"
  ((SECONDS - started < timeout)) || fail "not ready after ${timeout}s"
  if port_open "$port" && grep -q 'Kafka Server started' "$run/kafka.log" &&
    kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" \
      --command-config "$run/admin.properties" --list >/dev/null 2>&1; then
    break
  fi
  sleep 1
done
log "ready in $((SECONDS - started))s"

cat >"$run/secure.env" <<EOF
KAFKA_SASL_SSL_BROKERS=127.0.0.1:$port
KAFKA_SSL_BROKERS=127.0.0.1:$sslport
KAFKA_TLS_BROKERS=127.0.0.1:$tlsport
KAFKA_TLS_CA=$run/ca.pem
KAFKA_TLS_CERT=$run/client.pem
KAFKA_TLS_KEY=$run/client.key
KAFKA_TLS_EXPIRED_CERT=$run/expired.pem
KAFKA_TLS_EXPIRED_KEY=$run/expired.key
KAFKA_ADMIN_USER=admin
KAFKA_ADMIN_PASSWORD=$admin_pw
KAFKA_SASL_USER=weir
KAFKA_SASL_PASSWORD=$weir_pw
EOF
chmod 600 "$run/secure.env"
cat "$run/secure.env"
