package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/statedir"
)

// A state volume nearly full pauses the instance instead of letting
// Badger's mmap'd writes fault: /readyz says 503 "disk full", no epoch or
// batch ends, and once the space returns it resumes by itself and the
// output is exact.
//
// The volume is the test machine's own: the minimum is set 512 MiB below
// its free space, and a 1 GiB file reserved with fallocate (no bytes
// written, nothing mounted, so it runs without root and on any
// filesystem that supports fallocate; elsewhere it skips) takes it below.
// Other processes writing or freeing more than 512 MiB meanwhile would
// disturb it.
func TestDiskFullPausesAndResumes(t *testing.T) {
	for _, mode := range []weir.Mode{weir.Continuous, weir.MicroBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) { testDiskFull(t, env, mode) })
		})
	}
}

func testDiskFull(t *testing.T, env *kafkatest.Env, mode weir.Mode) {
	stateDir := t.TempDir()
	free, err := statedir.Free(stateDir)
	require.NoError(t, err)
	// The margin leaves room for what the other test binaries of
	// go test ./... write meanwhile (a build's cache takes gigabytes):
	// with 512 MiB the instance saw its disk full after the filler went.
	const margin, filler = 2 << 30, 4 << 30
	if free < 2*filler {
		t.Skipf("%d MiB free: too little to fill", free>>20)
	}
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 2)
	kafkatest.CreateTopic(t, env, out, 2)
	want := map[string]int64{}
	vocab := []string{"a", "b", "c", "d"}
	inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t),
		weir.WithStateDir(stateDir), weir.WithMode(mode), weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithHTTP("127.0.0.1:0"), weir.WithMinFreeDisk(int64(free-margin)))
	defer func() { require.NoError(t, inst.stop(t)) }()
	produceLines(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)

	fill := filepath.Join(filepath.Dir(stateDir), "filler")
	f, err := os.Create(fill)
	require.NoError(t, err)
	defer os.Remove(fill)
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, filler); err != nil {
		require.NoError(t, f.Close())
		t.Skipf("fallocate: %v", err)
	}
	require.NoError(t, f.Close())
	before := countsSeen(t, env, out)
	produceLines(t, env, in, 100, 100, vocab, want)
	addr := inst.app.HTTPAddr()
	require.Eventually(t, func() bool {
		status, body := readyz(t, addr)
		return status == http.StatusServiceUnavailable && strings.Contains(fmt.Sprint(body["error"]), "disk full")
	}, 30*time.Second, 50*time.Millisecond, "never reported the disk full")
	time.Sleep(time.Second)
	require.Equal(t, before, countsSeen(t, env, out), "no epoch or batch commits while the disk is full")

	require.NoError(t, os.Remove(fill))
	seen := waitForCounts(t, env, out, want)
	requireExact(t, want, seen)
	require.Eventually(t, func() bool {
		status, _ := readyz(t, addr)
		return status == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "never ready again")
}
