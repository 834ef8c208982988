package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/statedir"
)

// DefaultMinFreeDisk is the free space below which an instance stops
// taking work (Config.MinFreeDisk): 256 MiB, above twice what Badger may
// write or map at once for the stores — a memtable flushed to a table
// (16 MiB), the next memtable's write-ahead file (16 MiB), a value-log
// file (64 MiB), a compaction's output tables — so that the mmap'd writes
// of a flush never run past the end of a full volume, which Badger cannot
// survive (SIGBUS).
const DefaultMinFreeDisk = 256 << 20

// diskPoll is how often a paused instance looks at the free space again.
const diskPoll = 500 * time.Millisecond

// DiskLow returns ErrDiskFull, with the numbers, when the state volume's
// free space is below the minimum; nil otherwise, and when the minimum is
// off (negative) or the volume cannot be asked.
func (r *Runtime) DiskLow() error {
	min := r.cfg.MinFreeDisk
	if min == 0 {
		min = DefaultMinFreeDisk
	}
	if min < 0 {
		return nil
	}
	free, err := r.freeSpace()
	if err != nil || free >= uint64(min) {
		return nil
	}
	return fmt.Errorf("%w: the state volume of %s has %d MiB free, below the %d MiB minimum (WithMinFreeDisk); processing paused until space returns",
		ErrDiskFull, r.cfg.StateDir, free>>20, min>>20)
}

func (r *Runtime) freeSpace() (uint64, error) {
	if f := r.cfg.FreeSpace; f != nil {
		return f()
	}
	return statedir.Free(r.cfg.StateDir)
}

// WaitForDisk returns at once while the state volume has room; otherwise
// it reports the App Retrying with ErrDiskFull (Hooks.DiskFull), waits
// until the free space is back above the minimum — the engines call it
// before an epoch end or a batch, so no work is taken meanwhile and
// nothing is written to Badger — and reports the return. It returns
// ctx's error if ctx ends first.
func (r *Runtime) WaitForDisk(ctx context.Context) error {
	low := r.DiskLow()
	if low == nil {
		return nil
	}
	r.log.Warn("weir: state volume nearly full; processing paused", "err", low)
	if h := r.cfg.Hooks.DiskFull; h != nil {
		h(low)
	}
	t := time.NewTicker(diskPoll)
	defer t.Stop()
	for low != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		low = r.DiskLow()
	}
	r.log.Info("weir: state volume has room again; processing resumes", "dir", r.cfg.StateDir)
	if h := r.cfg.Hooks.DiskFull; h != nil {
		h(nil)
	}
	return nil
}
