package weir

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/offsets"
)

// openWAL opens the instance's offsets log (the micro-batch write-ahead
// log and the continuous epoch log). A log Badger cannot open or read is
// set aside (statedir.SetAside, the newest statedir.Keep copies kept) and
// a new one opened: Kafka's committed offsets are the truth it is rebuilt
// from (see offsets' package documentation, "A lost log"). In micro-batch
// mode the new log starts its batch ids above any the lost one can have
// given (seedBatchIDs), so a ForEachBatch sink keyed by batch id never sees
// an id again for other records.
func (a *App) openWAL(ctx context.Context) (*offsets.Log, error) {
	dir := filepath.Join(a.cfg.stateDir, "offsets")
	opts := offsets.Options{Logger: a.cfg.logger}
	wlog, err := offsets.Open(dir, opts)
	var d *statedir.Damage
	if err != nil && errors.As(err, &d) {
		aside, serr := statedir.SetAside(dir, time.Now(), statedir.Keep)
		if serr != nil {
			return nil, errors.Join(err, serr)
		}
		a.cfg.logger.Warn("weir: write-ahead log damaged; set aside, rebuilding it from the committed offsets",
			"dir", dir, "file", d.File, "cause", d.Reason, "err", d.Err, "set_aside_as", filepath.Base(aside), "kept", statedir.Keep)
		a.metrics.StateRebuilt(runtime.WALRebuilt, d.Reason)
		if wlog, err = offsets.Open(dir, opts); err == nil && a.cfg.mode == MicroBatch {
			if err = seedBatchIDs(ctx, wlog, a.cfg.applicationID, time.Now()); err != nil {
				_ = wlog.Close()
			}
		}
	}
	if err == nil {
		return wlog, nil
	}
	if statedir.Locked(err) {
		return nil, fmt.Errorf("write-ahead log in %s is in use by another process (a second instance on this machine needs its own WithStateDir): %w", a.cfg.stateDir, err)
	}
	return nil, fmt.Errorf("write-ahead log in %s: %w", a.cfg.stateDir, err)
}

// seedBatchIDs writes, into a rebuilt log, an empty committed batch
// numbered with the Unix millisecond time: the engine numbers the next
// batch after it, above every id the lost log gave (one batch per
// millisecond since 1970 is more than any run makes).
func seedBatchIDs(ctx context.Context, wlog *offsets.Log, ns string, now time.Time) error {
	wal, err := wlog.Namespace(ns)
	if err != nil {
		return err
	}
	id := now.UnixMilli()
	if err := wal.WritePlan(ctx, offsets.Plan{Batch: id, Timestamp: now, Trigger: "wal-rebuilt"}); err != nil {
		return err
	}
	return wal.WriteCommit(ctx, offsets.Commit{Batch: id, Timestamp: now})
}
