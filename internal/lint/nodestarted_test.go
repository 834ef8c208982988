package lint

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// node.sh and start.sh take a cluster node for started once its port is
// open and its log, after the start, says "Kafka Server started". A
// restarted broker logs hundreds of KiB before that line, and a
// `tail | grep -q` pipeline under pipefail fails when grep quits at the
// match while tail still writes (SIGPIPE): a node that has started would
// be taken for one that has not.
func TestNodeStartedSeesTheLineInALongLog(t *testing.T) {
	lib, err := filepath.Abs("../../scripts/kafka/cluster-lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	dir := t.TempDir()
	node := filepath.Join(dir, "run-cluster", "node1")
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	line := "[2026-12-01 17:48:12,577] INFO [TransactionCoordinator id=1] Resigned as the txn coordinator for partition 9\n"
	var log strings.Builder
	log.WriteString("[2026-12-01 17:47:36] node.sh: starting node 1 again\n")
	for log.Len() < 512<<10 {
		log.WriteString(line)
	}
	log.WriteString("[2026-12-01 17:48:12,192] INFO [KafkaRaftServer nodeId=1] Kafka Server started (kafka.server.KafkaRaftServer)\n")
	for range 2000 {
		log.WriteString(line)
	}
	if err := os.WriteFile(filepath.Join(node, "kafka.log"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail
dir=$1
source "$2"
port=$3
if node_started 1 0; then echo started; else echo "not started"; fi`
	out, err := exec.Command("bash", "-c", script, "bash", dir, lib, strconv.Itoa(port)).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "started" {
		t.Fatalf("node_started on a %d KiB log with the line: %q, want started", log.Len()>>10, got)
	}
}
