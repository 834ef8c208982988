package tasks

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
// (a key's count dropping from 43 to 24, say). Kafka
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
// The raise must not reach a zombie: a member removed from its group
// whose claims start again from its last assignment (a rewind ended them)
// acquires its tasks with its old generation, and raised to the new
// owner's its records would be the owner's — restores would apply them
// after the owner's newer ones (an aggregate gone back to an old value),
// and its external sink claim, in the owner's generation, would fence the
// owner. So a task acquired without a generation (the member out of the
// group: franz-go's empty member id) keeps generation 0, and one acquired
// with a generation older than its changelog's newest asks the
// coordinator first (Task.replaced): a member it no longer knows, or a
// generation the group moved past, keeps its own. Such a task processes
// nothing (its claims start again once the member rejoined), and any
// record it wrote would be skipped, its sink writes fenced.
//
// A replaced owner's records may also land after the new owner restored
// but before the new owner's first record: a restore would apply them, the
// new owner's store would not hold them. So under at-least-once a task,
// once restored, writes a marker record with its generation to each of its
// changelog partitions and catches up to it (claimChangelogs): what landed
// before the marker is in its store as in any restore, what lands after it
// every restore skips. Restores and the live store then agree.
//
// What it does not cover: log compaction keeps a key's last record even
// when it is a skipped one, so after compaction a restore may miss the new
// owner's value of a key the replaced owner wrote late (the key then holds
// an older value). That needs a member stalled past its session timeout in
// the middle of its commit, and does not exist under exactly-once, where a
// replaced owner's transaction cannot commit.

// HeaderWriter is the changelog record header holding the writer generation
// of the task that wrote it, in decimal.
const HeaderWriter = "weir.writer"

// HeaderWriterMarker is set on a marker record: a task's claim on a
// changelog partition (see claimChangelogs), not a store write.
const HeaderWriterMarker = "weir.writer.marker"

// markerKey is the key of marker records. A tombstone under it, so that
// compaction eventually removes the markers.
var markerKey = []byte("\x00weir.writer.marker")

// markerRecord is the marker of writer generation g on a changelog
// partition.
func markerRecord(topic string, partition, g int32) kafka.Record {
	return kafka.Record{
		Topic: topic, Partition: partition, Key: markerKey,
		Headers: []kafka.Header{writerHeader(g), {Key: HeaderWriterMarker, Value: []byte("1")}},
	}
}

// IsWriterMarker reports whether a changelog record is a marker.
func IsWriterMarker(headers []kafka.Header) bool {
	for _, h := range headers {
		if h.Key == HeaderWriterMarker {
			return true
		}
	}
	return false
}

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
