package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// syncBuffer is a bytes.Buffer safe to write and read from two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run(t.Context(), nil, &out, &errOut))
	require.Contains(t, errOut.String(), "dev-broker")

	out.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"help"}, &out, &errOut))
	require.Contains(t, out.String(), "usage: weir <command>")

	out.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"help", "dev-broker"}, &out, &errOut))
	require.Contains(t, out.String(), "-addr")

	errOut.Reset()
	require.Equal(t, 2, run(t.Context(), []string{"nope"}, &out, &errOut))
	require.Contains(t, errOut.String(), `unknown command "nope"`)

	for _, args := range [][]string{
		{"dev-broker", "--bogus"},
		{"dev-broker", "extra"},
		{"dev-broker", "--partitions", "0"},
		{"dev-broker", "--log-level", "loud"},
	} {
		require.Equal(t, 2, run(t.Context(), args, &out, &errOut), "%v", args)
	}
	errOut.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"dev-broker", "--addr", "no-port"}, &out, &errOut))
	require.Contains(t, errOut.String(), "weir: dev-broker:")
}

var brokersLine = regexp.MustCompile(`(?m)^KAFKA_BROKERS=(\S+)$`)

func TestDevBroker(t *testing.T) {
	dir := t.TempDir()
	start := func() (addr string, stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"dev-broker", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "none"}, &out, &errOut)
		}()
		require.Eventually(t, func() bool { return brokersLine.MatchString(out.String()) }, 10*time.Second, 10*time.Millisecond)
		addr = brokersLine.FindStringSubmatch(out.String())[1]
		return addr, func() {
			cancel()
			select {
			case code := <-done:
				require.Equal(t, 0, code, errOut.String())
				require.Contains(t, errOut.String(), "stopped")
			case <-time.After(10 * time.Second):
				t.Fatal("dev-broker did not stop")
			}
		}
	}

	addr, stop := start()
	require.NotContains(t, addr, ":0")
	a, err := kafka.NewAdmin(kafka.Config{Brokers: strings.Split(addr, ",")})
	require.NoError(t, err)
	require.NoError(t, a.EnsureTopics(t.Context(), []kafka.TopicSpec{{Name: "persisted", Partitions: 3}}))
	require.NoError(t, a.Close())
	stop()

	addr, stop = start()
	defer stop()
	a, err = kafka.NewAdmin(kafka.Config{Brokers: []string{addr}})
	require.NoError(t, err)
	defer a.Close()
	counts, err := a.PartitionCounts(t.Context(), []string{"persisted"})
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"persisted": 3}, counts, "--data keeps topics across restarts")
}
