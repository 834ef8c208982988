package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The Kafka Streams rows run bench/kstreams (a small Java app, see its
// pom.xml) as the child process instead of this binary.
const (
	sysKStreamsALO = "kstreams-alo"
	sysKStreamsEOS = "kstreams-eos"
)

func isKStreams(sys string) bool {
	sys, _, _ = splitEpoch(sys)
	return sys == sysKStreamsALO || sys == sysKStreamsEOS || sys == sysKStreamsEOSCache
}

// buildKStreams builds bench/kstreams/target/kstreams-bench.jar once with
// `mvn -q -B package` (Maven skips what is up to date) and returns its
// path, or the reason the Kafka Streams rows are skipped.
func buildKStreams(dir string) (jar, skip string) {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", tool + " is not on PATH"
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil {
		return "", "no " + filepath.Join(dir, "pom.xml") + " (run the benchmark from bench/)"
	}
	fmt.Fprintln(os.Stderr, "bench: building the Kafka Streams app: mvn -q -B package in", dir)
	cmd := exec.Command("mvn", "-q", "-B", "package")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("mvn package failed: %v: %s", err, lastLines(string(out), 5))
	}
	jar = filepath.Join(dir, "target", "kstreams-bench.jar")
	if _, err := os.Stat(jar); err != nil {
		return "", "mvn package made no " + jar
	}
	abs, err := filepath.Abs(jar)
	if err != nil {
		return "", err.Error()
	}
	return abs, ""
}

// kstreamsEmbeddedWordCount is why the Kafka Streams word-count rows are
// skipped on the embedded broker. Kafka Streams creates its repartition and
// changelog topics through the Java admin client, which fails on kfake
// twice: kfake answers CreateTopics with config sources of -1 ("id should
// be positive, id: -1") and DescribeTopicPartitions without
// eligibleLeaderReplicas (a NullPointerException in the client), also when
// the topics were created beforehand. The stateless rows need no internal
// topics and run on kfake.
const kstreamsEmbeddedWordCount = "Kafka Streams cannot create or describe its internal topics on kfake (CreateTopics config source -1, DescribeTopicPartitions without eligibleLeaderReplicas); run with -brokers"

// skipReason says why a system's row for a workload is not run, or "".
func (h *harness) skipReason(sys, wl string) string {
	base, _, _ := splitEpoch(sys)
	if why := h.skip[base]; why != "" {
		return why
	}
	if isKStreams(sys) && wl == wlWordCount && h.embedded {
		return kstreamsEmbeddedWordCount
	}
	return ""
}

// kstreamsCommand is the child command line of a Kafka Streams row; its
// epoch segment (splitEpoch) becomes the app's eighth argument,
// commit.interval.ms.
func kstreamsCommand(jar, sys, wl, brokers, in, out, app, dir string) (*exec.Cmd, error) {
	base, epoch, err := splitEpoch(sys)
	if err != nil {
		return nil, err
	}
	return exec.Command("java", "-jar", jar, base, wl, brokers, in, out, app, dir,
		strconv.FormatInt(epoch.Milliseconds(), 10)), nil
}
