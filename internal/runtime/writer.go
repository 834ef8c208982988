package runtime

import (
	"strconv"

	"github.com/weirstream/weir/internal/kafka"
)

// Changelog writer generations: restores skip a replaced owner's late
// records.
//
// Under at-least-once nothing fences a member that was replaced without
// knowing it — a process stalled past its session timeout (a GC or VM
// pause, SIGSTOP) wakes up, finishes its epoch and writes that epoch's
// changelog records after the new owner has restored and written newer
// values. A restore that applied them would take the store back in time
// (the chaos suite saw a key's count drop from 43 to 24 that way). Kafka
// Streams' at_least_once has the same window; exactly-once closes it with
// transactions, since the zombie's transaction cannot commit.
//
// So every changelog record a task writes carries HeaderWriter: the task's
// writer generation, which is the group generation of the session that
// acquired the task, raised to the newest generation the task's restore
// saw (should the group's generations have restarted, say after the group
// was deleted). A replaced owner's generation is older than its
// successor's, because the successor joined a later generation. A restore
// reads the changelog in offset order and skips every record whose
// generation is below the newest seen so far — records written after a
// newer owner's by an older one — and the checkpoint keeps that newest
// generation, so a restore that resumes from it skips them too. Records
// without the header (older versions of weir) are always applied.
//
// What it does not cover: a replaced owner's records that land after the
// new owner restored but before the new owner's first changelog record of
// that partition (a restore then applies them, the new owner's store does
// not hold them), and log compaction, which keeps a key's last record even
// when it is a skipped one. Both need a replaced owner that stalled past
// its session timeout, and neither exists under exactly-once.

// HeaderWriter is the changelog record header holding the writer generation
// of the task that wrote it, in decimal.
const HeaderWriter = "weir.writer"

// writerHeader is the header stamping a changelog record with generation g.
func writerHeader(g int32) kafka.Header {
	return kafka.Header{Key: HeaderWriter, Value: strconv.AppendInt(nil, int64(g), 10)}
}

// WriterOf returns the writer generation of a changelog record, and
// whether it has one.
func WriterOf(headers []kafka.Header) (int32, bool) {
	for _, h := range headers {
		if h.Key != HeaderWriter {
			continue
		}
		g, err := strconv.ParseInt(string(h.Value), 10, 32)
		if err != nil || g < 0 {
			return 0, false
		}
		return int32(g), true
	}
	return 0, false
}

// writerFilter applies the restore rule to changelog records in offset
// order: a record whose generation is below the newest seen is stale.
type writerFilter struct {
	newest  int32
	skipped int
}

// keep reports whether a record with these headers is to be applied.
func (f *writerFilter) keep(headers []kafka.Header) bool {
	g, ok := WriterOf(headers)
	switch {
	case !ok:
		return true
	case g < f.newest:
		f.skipped++
		return false
	default:
		f.newest = g
		return true
	}
}
