package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/IBM/sarama"
)

// Bounds of the fetches [Admin.ReadRange] sends.
const (
	// readMaxWait is how long the broker may hold a fetch that finds
	// nothing to return (the range's end is not written or not stable yet).
	readMaxWait = 100 * time.Millisecond
	// readFetchBytes bounds a response (one partition); it doubles while a
	// response holds nothing but a record batch cut short by the bound.
	readFetchBytes = 4 << 20
	// readMinFetchBytes is the least a fetch sized to the rest of its
	// range asks for (see rangeReader.wantBytes).
	readMinFetchBytes = 64 << 10
	// readGuessRecordBytes is the bytes per record assumed before an
	// Admin has read any.
	readGuessRecordBytes = 256
	// readUnknownRetries bounds the retries of a fetch answered
	// UNKNOWN_TOPIC_OR_PARTITION by a leader the metadata names.
	readUnknownRetries = 3
	// readMaxStalls bounds consecutive fetches that return nothing although
	// the partition holds readable records at the fetch offset.
	readMaxStalls = 10
)

// ReadRange reads the records of one partition with offsets in [from, to),
// in offset order, calling fn for each, outside any consumer group. It is
// how state is restored from a changelog topic. An error from fn stops the
// read and is returned as is.
//
// ReadRange is exact: it sends Fetch requests itself and follows the offsets
// of the record batches the broker returns, not a count of records or a
// quiet period. After each batch the next offset to fetch is the batch's
// last offset + 1, so transaction markers (control batches, never
// delivered), aborted data, batches emptied by compaction and the offset
// gaps compaction leaves are stepped over, and ReadRange returns as soon as
// that offset reaches to — also when the range ends with a commit or abort
// marker.
//
// Under readCommitted the fetches are read_committed and records of aborted
// transactions are dropped the way Kafka's Java consumer drops them, from
// the aborted-transaction list of each fetch response; without it every
// data record in the range is delivered, aborted or not.
//
// to is normally the partition's end ([Admin.EndOffsets]) or, under
// readCommitted, its last stable offset ([Admin.StableOffsets]). ReadRange
// waits (polling every 100 ms) for records below to that are not written,
// or under readCommitted not yet decided, until ctx is done.
//
// from is normally the log start ([Admin.StartOffsets]). If records below
// the log start are deleted (retention, DeleteRecords) between that call
// and the fetch, or while ReadRange runs, they no longer exist: ReadRange
// logs a warning and goes on from the new log start, so the caller sees the
// gap in the offsets of the records it gets (and nothing at all if the
// whole range is gone). A from past the partition's end is a
// *[PartitionError] wrapping sarama.ErrOffsetOutOfRange.
//
// Broker errors that a metadata refresh can cure (leader moves, network
// errors) are retried with backoff for a minute at most; the rest are
// *[PartitionError]s wrapping the sarama.KError. A topic or partition the
// cluster metadata does not have is one wrapping [ErrUnknownTopic] too
// (after sarama's own metadata retries, about half a second). A closed
// Admin gives an error wrapping [ErrClosed].
//
// ctx is checked before each fetch and between record batches. The fetches
// wait at most 100 ms on the broker and return at most 4 MiB, or
// Tuning.MaxPartitionFetchBytes when set (more only for a single record
// batch larger than that), less for a short range: about twice the rest of
// the range at the record size seen so far.
//
// Wire details: Fetch v11 with Kafka 2.5 as protocol version (the version
// sarama's own consumer picks for it; see fetchRequestVersion), sessionless,
// isolation level per readCommitted. Record batches (message format v2) are
// the norm; legacy message sets (formats v0/v1, written by clients older
// than Kafka 0.11 on brokers that still keep them) are read too, as
// non-transactional data.
func (a *Admin) ReadRange(ctx context.Context, topic string, partition int32, from, to int64, readCommitted bool, fn func(Record) error) error {
	if from >= to {
		return nil
	}
	if client, _ := ResolveClient(a.cfg.Client); client == ClientFranz {
		return a.readRangeFranz(ctx, topic, partition, from, to, readCommitted, fn)
	}
	version, err := fetchRequestVersion(protocolVersion)
	if err != nil {
		return err
	}
	r := &rangeReader{
		a: a, topic: topic, partition: partition, to: to,
		readCommitted: readCommitted, fn: fn,
		version: version, next: from, fetchSize: readFetchBytes,
	}
	if n := a.cfg.Tuning.MaxPartitionFetchBytes; n > 0 {
		r.fetchSize = n // the user's max.partition.fetch.bytes
	}
	return r.run(ctx, saramaRange{r}, readFetchBytes)
}

// fetchRequestVersion is the Fetch version sarama's consumer uses for the
// Kafka version v (sarama's brokerConsumer.fetchNewMessages), from the
// first with an isolation level and record batches (v4, Kafka 0.11) on.
func fetchRequestVersion(v sarama.KafkaVersion) (int16, error) {
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 12, nil // flexible versions, last fetched epoch
	case v.IsAtLeast(sarama.V2_3_0_0):
		return 11, nil // rack id
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 10, nil // current leader epoch, zstd
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 8, nil
	case v.IsAtLeast(sarama.V1_1_0_0):
		return 7, nil // fetch sessions
	case v.IsAtLeast(sarama.V1_0_0_0):
		return 6, nil
	case v.IsAtLeast(sarama.V0_11_0_0):
		return 5, nil // isolation level (v4), log start offset
	default:
		return 0, fmt.Errorf("%w: protocol version %s has no read_committed fetch (Kafka 0.11 or later needed)", ErrConfig, v)
	}
}

// recordOverhead approximates the bytes a record of a v2 record batch takes
// besides its key and value (length, attributes, deltas, header count).
const recordOverhead = 16

// rangeReader is the state of one ReadRange call.
type rangeReader struct {
	a             *Admin
	topic         string
	partition     int32
	to            int64
	readCommitted bool
	fn            func(Record) error
	version       int16

	next      int64 // the offset to fetch next; every offset below is done
	fetchSize int32 // max bytes of the next fetch
	// unsized turns off sizing fetches to the rest of the range, after a
	// response held only a record batch cut short (see wantBytes).
	unsized bool
}

// wantBytes is the byte bound of the next fetch: twice what the rest of the
// range should take at the record size the Admin has seen so far, between
// readMinFetchBytes and fetchSize. A short range — a micro-batch's share
// of one partition — then does not fetch (and sarama does not decode) 4 MiB
// of records past its end on every call; brokers return a first record
// batch whole whatever the bound (KIP-74), so a low estimate costs one
// more fetch, not progress.
func (r *rangeReader) wantBytes() int32 { return r.wantBytesAt(r.next) }

// wantBytesAt is wantBytes for a fetch from offset next.
func (r *rangeReader) wantBytesAt(next int64) int32 {
	if r.unsized {
		return r.fetchSize
	}
	per := r.a.recordBytes.Load()
	if per <= 0 {
		per = readGuessRecordBytes
	}
	want := 2 * per * (r.to - next)
	return int32(min(int64(r.fetchSize), max(readMinFetchBytes, want)))
}

// rangeClient is what a client does for rangeReader.run: send a fetch,
// and say what its errors mean.
type rangeClient interface {
	// fetch sends one Fetch request for next to the partition leader. A
	// nil answer is a response the broker emptied because a quota
	// throttles the client. A *readStopped error ends the read as is.
	fetch(ctx context.Context) (*rangeAnswer, error)
	// outOfRange reports OFFSET_OUT_OF_RANGE.
	outOfRange(err error) bool
	// retriable reports a fetch error that a retry may cure.
	retriable(err error) bool
	// unknownTopic reports a topic or partition the broker does not know,
	// which is retried readUnknownRetries times at most.
	unknownTopic(err error) bool
	// refreshed reports a failure that refreshed the metadata already,
	// with the client's own retries: an unknown topic then is one.
	refreshed(err error) bool
	// forget drops what the client knows of the partition's leader before
	// a retry.
	forget(err error)
	// fatal wraps a cause into the *PartitionError ReadRange returns.
	fatal(err error) error
	// tooLarge is the client's MESSAGE_TOO_LARGE, the cause of a record
	// batch larger than the largest fetch.
	tooLarge() error
}

// rangeAnswer is one fetch's answer for the partition, on either client.
type rangeAnswer struct {
	// hwm and lso are the partition's high watermark and last stable
	// offset.
	hwm, lso int64
	// consume delivers the answer's records in [next, to) and moves next
	// past every complete batch. partial reports, when next did not move,
	// an answer that holds only a record batch cut short by the fetch
	// size.
	consume func(ctx context.Context) (partial bool, err error)
	// skipTo, if set, returns the offset after the batches without
	// records that make up the whole answer, which the client dropped.
	skipTo func() (int64, bool)
}

// readStopped is an error of rangeClient.fetch that ends the read as is.
type readStopped struct{ err error }

func (e *readStopped) Error() string { return e.err.Error() }
func (e *readStopped) Unwrap() error { return e.err }

// run fetches through c until next reaches to. After progress the fetch
// size goes back to resetSize.
func (r *rangeReader) run(ctx context.Context, c rangeClient, resetSize int32) error {
	retries, stalls := 0, 0
	var failingSince time.Time
	for r.next < r.to {
		if err := ctx.Err(); err != nil {
			return r.errorf("%w", err)
		}
		answer, err := c.fetch(ctx)
		if err != nil {
			var stopped *readStopped
			switch {
			case errors.As(err, &stopped):
				return stopped.err
			case c.outOfRange(err):
				if err := r.skipToLogStart(ctx); err != nil {
					return err
				}
				continue
			case !c.retriable(err):
				return c.fatal(err)
			}
			refreshed := c.refreshed(err)
			if retries == 0 {
				failingSince = time.Now()
			}
			giveUp := time.Since(failingSince) > retryBudget
			if c.unknownTopic(err) {
				giveUp = retries >= readUnknownRetries || refreshed
			}
			if giveUp {
				return c.fatal(fmt.Errorf("%d attempts: %w", retries+1, err))
			}
			r.a.cfg.logger().Debug("kafka: read: fetch failed, retrying",
				"topic", r.topic, "partition", r.partition, "offset", r.next, "err", err)
			if !refreshed {
				c.forget(err)
			}
			if perr := Pause(ctx, Backoff(retries)); perr != nil {
				return r.errorf("%w (retrying after %w)", perr, err)
			}
			retries++
			continue
		}
		retries = 0
		if answer == nil {
			continue // throttled
		}

		before := r.next
		partial, err := answer.consume(ctx)
		if err != nil {
			return err
		}
		if r.next > before {
			stalls, r.fetchSize = 0, resetSize
			continue
		}
		// No progress.
		if partial {
			// Only a record batch cut short by fetchSize: ask for more.
			// (Brokers since KIP-74 return a first batch whole whatever
			// the limit, so this is for other implementations.)
			if !r.unsized {
				r.unsized = true // ask for fetchSize, then double it
				continue
			}
			if r.fetchSize == math.MaxInt32 {
				return c.fatal(fmt.Errorf("record batch at offset %d larger than %d bytes: %w", r.next, r.fetchSize, c.tooLarge()))
			}
			r.fetchSize = int32(min(2*int64(r.fetchSize), math.MaxInt32))
			continue
		}
		if answer.skipTo != nil {
			if end, ok := answer.skipTo(); ok && end > r.next {
				r.next = min(end, r.to)
				stalls = 0
				continue
			}
		}
		readable := answer.hwm
		if r.readCommitted {
			readable = answer.lso
		}
		if r.next < readable {
			if stalls++; stalls >= readMaxStalls {
				return c.fatal(fmt.Errorf("%d fetches at offset %d returned no record batch although the partition is readable up to %d", stalls, r.next, readable))
			}
		}
		// Otherwise nothing below to is readable yet: the broker held the
		// fetch for readMaxWait; poll again.
	}
	return nil
}

// saramaRange is the rangeClient of sarama: the rangeReader's own
// methods, which send sarama's Fetch requests and decode its responses.
type saramaRange struct{ *rangeReader }

func (s saramaRange) fetch(context.Context) (*rangeAnswer, error) {
	block, err := s.fetchBlock()
	if err != nil || block == nil {
		return nil, err
	}
	return &rangeAnswer{
		hwm: block.HighWaterMarkOffset,
		lso: block.LastStableOffset,
		consume: func(ctx context.Context) (bool, error) {
			return s.consume(ctx, block)
		},
		skipTo: func() (int64, bool) {
			if len(block.RecordsSet) > 0 || block.Partial {
				return 0, false
			}
			// The response held only batches without records (left by
			// compaction): sarama decodes and drops them.
			return droppedBatchesEnd(block)
		},
	}, nil
}

func (saramaRange) outOfRange(err error) bool { return errors.Is(err, sarama.ErrOffsetOutOfRange) }
func (saramaRange) retriable(err error) bool  { return retriableFetchError(err) }
func (saramaRange) unknownTopic(err error) bool {
	return errors.Is(err, sarama.ErrUnknownTopicOrPartition)
}

// refreshed: a failed leader lookup has just refreshed the metadata, with
// sarama's own retries (Metadata.Retry). A broker that does not know the
// partition may be behind the metadata (a topic just created): worth a few
// retries.
func (saramaRange) refreshed(err error) bool {
	var lookup *leaderLookupError
	return errors.As(err, &lookup)
}
func (s saramaRange) forget(error)          { _ = s.a.client.RefreshMetadata(s.topic) }
func (s saramaRange) fatal(err error) error { return s.rangeReader.fatal(err) }
func (saramaRange) tooLarge() error         { return sarama.ErrMessageTooLarge }

// fetch sends one Fetch request for next to the partition leader and
// returns the partition's block without error, or the error: a transport
// error, a sarama.KError, sarama.ErrIncompleteResponse. A response the
// broker emptied because a quota throttles the client is (nil, nil).
func (r *rangeReader) fetchBlock() (*sarama.FetchResponseBlock, error) {
	broker, epoch, err := r.a.client.LeaderAndEpoch(r.topic, r.partition)
	if err != nil {
		return nil, &leaderLookupError{err}
	}
	size := r.wantBytes()
	req := &sarama.FetchRequest{
		Version:      r.version,
		MaxWaitTime:  int32(readMaxWait / time.Millisecond),
		MinBytes:     1,
		MaxBytes:     size,
		Isolation:    sarama.ReadUncommitted,
		SessionID:    0,
		SessionEpoch: -1, // no fetch session: a full fetch each time
	}
	if r.readCommitted {
		req.Isolation = sarama.ReadCommitted
	}
	req.AddBlock(r.topic, r.partition, r.next, size, epoch)
	resp, err := broker.Fetch(req)
	if err != nil {
		// The connection may be broken: close it so that the next
		// LeaderAndEpoch reopens it (what sarama's own consumer does).
		if kerr := sarama.KError(0); !errors.As(err, &kerr) {
			_ = broker.Close()
		}
		return nil, err
	}
	if r.readCommitted && resp.Version < 4 {
		// sarama lowered the version to what the broker supports.
		return nil, fmt.Errorf("%w: the broker serves Fetch v%d, read_committed needs v4 (Kafka 0.11)", sarama.ErrUnsupportedVersion, resp.Version)
	}
	if kerr := sarama.KError(resp.ErrorCode); kerr != sarama.ErrNoError {
		return nil, kerr
	}
	block := resp.GetBlock(r.topic, r.partition)
	if block == nil && resp.ThrottleTime > 0 {
		return nil, nil
	}
	if block == nil {
		return nil, sarama.ErrIncompleteResponse
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, block.Err
	}
	return block, nil
}

// leaderLookupError is a failed lookup of the partition leader, which
// refreshes the metadata when the leader is not cached.
type leaderLookupError struct{ err error }

func (e *leaderLookupError) Error() string { return "leader: " + e.err.Error() }
func (e *leaderLookupError) Unwrap() error { return e.err }

// retriableFetchError reports the fetch errors that a metadata refresh and
// a retry can cure. Transport errors are retriable; a closed client is not.
func retriableFetchError(err error) bool {
	var kerr sarama.KError
	switch {
	case errors.Is(err, sarama.ErrClosedClient), errors.Is(err, sarama.ErrUnsupportedVersion):
		return false
	case errors.As(err, &kerr):
		return retriableMetadataError(kerr) ||
			errors.Is(kerr, sarama.ErrUnknownTopicOrPartition) ||
			errors.Is(kerr, sarama.ErrKafkaStorageError) ||
			errors.Is(kerr, sarama.ErrFetchSessionIDNotFound) ||
			errors.Is(kerr, sarama.ErrInvalidFetchSessionEpoch) ||
			errors.Is(kerr, sarama.ErrBrokerNotAvailable)
	default:
		return true
	}
}

// skipToLogStart handles OFFSET_OUT_OF_RANGE at next: if the log now starts
// after next, the records in between are gone and the read goes on from the
// log start; otherwise next is past the end and that is the error.
func (r *rangeReader) skipToLogStart(ctx context.Context) error {
	starts, err := r.a.StartOffsets(ctx, r.topic, []int32{r.partition})
	if err != nil {
		return r.errorf("offset %d out of range, log start unknown: %w", r.next, err)
	}
	start, ok := starts[r.partition]
	if !ok || start <= r.next {
		return r.fatal(fmt.Errorf("log start %d: %w", start, sarama.ErrOffsetOutOfRange))
	}
	r.a.cfg.logger().Warn("kafka: read: records below the log start are gone, reading on from it",
		"topic", r.topic, "partition", r.partition, "offset", r.next, "log_start", start, "to", r.to)
	r.next = start
	return nil
}

// consume delivers the records of one fetch response and advances next past
// every complete batch in it. partial reports a response that ends with a
// record batch or message cut short by the fetch size (never delivered:
// the next fetch starts at it).
func (r *rangeReader) consume(ctx context.Context, block *sarama.FetchResponseBlock) (partial bool, err error) {
	var txns abortedTxns
	if r.readCommitted {
		txns.init(block.AbortedTransactions)
	}
	partial = block.Partial
	for _, recs := range block.RecordsSet {
		if r.next >= r.to {
			return partial, nil
		}
		if err := ctx.Err(); err != nil {
			return partial, r.errorf("%w", err)
		}
		switch {
		case recs == nil:
		case recs.RecordBatch != nil:
			if recs.RecordBatch.PartialTrailingRecord {
				return true, nil // always the last one sarama decodes
			}
			if err := r.batch(recs.RecordBatch, &txns); err != nil {
				return partial, err
			}
		case recs.MsgSet != nil:
			if err := r.messageSet(recs.MsgSet); err != nil {
				return partial, err
			}
			if recs.MsgSet.PartialTrailingMessage {
				partial = true
			}
		}
	}
	return partial, nil
}

// batch delivers the records of one record batch in [next, to) unless it
// is a control batch or, under read_committed, aborted; next moves past it.
func (r *rangeReader) batch(b *sarama.RecordBatch, txns *abortedTxns) error {
	end := b.LastOffset() + 1
	if end <= r.next {
		return nil // all below the range (a batch the fetch offset is after)
	}
	deliver := !b.Control
	if r.readCommitted {
		// Kafka's Java consumer (CompletedFetch.nextFetchedRecord): a
		// producer's aborted transaction is active from its first offset
		// to the producer's abort marker.
		txns.activateUpTo(b.LastOffset())
		if b.Control {
			abort, err := isAbortMarker(b)
			if err != nil {
				return r.fatal(fmt.Errorf("control batch at offset %d: %w", b.FirstOffset, err))
			}
			if abort {
				txns.end(b.ProducerID)
			}
		} else if b.IsTransactional && txns.aborted(b.ProducerID) {
			deliver = false
		}
	}
	if n := int64(len(b.Records)); n > 0 {
		var size int64
		for _, rec := range b.Records {
			size += int64(len(rec.Key)+len(rec.Value)) + recordOverhead
		}
		r.a.recordBytes.Store(size / n)
	}
	if deliver {
		for _, rec := range b.Records {
			off := b.FirstOffset + rec.OffsetDelta
			if off < r.next {
				continue // before from, in a batch the range starts inside
			}
			if off >= r.to {
				break
			}
			if err := r.fn(r.recordFromBatch(b, rec, off)); err != nil {
				return err
			}
			r.next = off + 1
		}
	}
	r.next = max(r.next, end)
	return nil
}

// messageSet delivers the messages of a legacy message set (formats v0 and
// v1, no transactions) in [next, to); next moves past each message block.
func (r *rangeReader) messageSet(ms *sarama.MessageSet) error {
	for _, mb := range ms.Messages {
		if r.next >= r.to {
			return nil
		}
		if mb == nil || mb.Msg == nil {
			continue
		}
		inner := mb.Messages()
		for _, m := range inner {
			if m == nil || m.Msg == nil {
				continue
			}
			// Messages in a v1 compressed wrapper carry offsets relative
			// to the first; the wrapper carries the last one's absolute
			// offset. Without a wrapper, m is mb: the base is 0.
			off := m.Offset
			if m.Msg.Version >= 1 {
				off += mb.Offset - inner[len(inner)-1].Offset
			}
			if off < r.next {
				continue
			}
			if off >= r.to {
				break
			}
			ts := m.Msg.Timestamp
			if m.Msg.Version >= 1 && (mb.Msg.LogAppendTime || m.Msg.LogAppendTime) {
				ts = mb.Msg.Timestamp
			}
			if err := r.fn(Record{
				Topic: r.topic, Partition: r.partition, Offset: off,
				Key: m.Msg.Key, Value: m.Msg.Value, Timestamp: ts,
			}); err != nil {
				return err
			}
			r.next = off + 1
		}
		r.next = max(r.next, mb.Offset+1)
	}
	return nil
}

// recordFromBatch converts one record of a record batch at offset off.
func (r *rangeReader) recordFromBatch(b *sarama.RecordBatch, rec *sarama.Record, off int64) Record {
	out := Record{
		Topic:     r.topic,
		Partition: r.partition,
		Offset:    off,
		Key:       rec.Key,
		Value:     rec.Value,
	}
	switch {
	case b.LogAppendTime:
		out.Timestamp = b.MaxTimestamp
	case !b.FirstTimestamp.IsZero(): // zero: the batch has no timestamps (-1)
		out.Timestamp = b.FirstTimestamp.Add(rec.TimestampDelta)
	}
	if len(rec.Headers) > 0 {
		out.Headers = make([]Header, 0, len(rec.Headers))
		for _, h := range rec.Headers {
			if h != nil {
				out.Headers = append(out.Headers, Header{Key: string(h.Key), Value: h.Value})
			}
		}
	}
	return out
}

// isAbortMarker reports whether a control batch ends a transaction by
// aborting it: its first record's key is version int16, type int16, with
// type 0 abort and 1 commit. A control batch emptied by compaction, or of a
// newer type, is not an abort marker.
func isAbortMarker(b *sarama.RecordBatch) (bool, error) {
	if len(b.Records) == 0 || b.Records[0] == nil {
		return false, nil
	}
	key := b.Records[0].Key
	if len(key) < 4 {
		return false, fmt.Errorf("control record key of %d bytes", len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return false, fmt.Errorf("control record key version %d", v)
	}
	return binary.BigEndian.Uint16(key[2:]) == 0, nil
}

// abortedTxns tracks, within one fetch response, the producers whose
// aborted transaction the batches have reached.
type abortedTxns struct {
	pending []*sarama.AbortedTransaction // by first offset, not reached yet
	active  map[int64]struct{}           // producer ids
}

func (t *abortedTxns) init(list []*sarama.AbortedTransaction) {
	t.pending = slices.DeleteFunc(slices.Clone(list), func(a *sarama.AbortedTransaction) bool { return a == nil })
	slices.SortStableFunc(t.pending, func(a, b *sarama.AbortedTransaction) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
}

// activateUpTo activates the aborted transactions that start at or before
// offset.
func (t *abortedTxns) activateUpTo(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		if t.active == nil {
			t.active = make(map[int64]struct{})
		}
		t.active[t.pending[0].ProducerID] = struct{}{}
		t.pending = t.pending[1:]
	}
}

// end deactivates a producer at its abort marker.
func (t *abortedTxns) end(producerID int64) { delete(t.active, producerID) }

// aborted reports whether the producer's transactional batches are aborted.
func (t *abortedTxns) aborted(producerID int64) bool {
	_, ok := t.active[producerID]
	return ok
}

// recordsNextOffset is sarama's FetchResponseBlock.recordsNextOffset field
// (*int64, unexported): the offset after the last record batch decoded from
// the response, which sarama's consumer uses to step over batches without
// records. sarama drops such batches from RecordsSet, and compaction leaves
// them (it keeps a producer's last batch, emptied, for the producer's
// state), so this field is the only trace of them. Reading an unexported
// field through reflect is allowed; if a sarama upgrade renames it, the
// lookup fails and ReadRange reports a stall instead of skipping (see
// TestReadRangeEmptyBatches).
var recordsNextOffset, recordsNextOffsetOK = func() (reflect.StructField, bool) {
	f, ok := reflect.TypeFor[sarama.FetchResponseBlock]().FieldByName("recordsNextOffset")
	return f, ok && f.Type == reflect.TypeFor[*int64]()
}()

// droppedBatchesEnd returns the offset after the batches without records
// that make up a whole response, as sarama computed it. The caller checks
// that the response has no RecordsSet and is not partial: then every batch
// sarama decoded was complete and empty.
func droppedBatchesEnd(block *sarama.FetchResponseBlock) (int64, bool) {
	if !recordsNextOffsetOK {
		return 0, false
	}
	f := reflect.ValueOf(block).Elem().FieldByIndex(recordsNextOffset.Index)
	if f.IsNil() {
		return 0, false
	}
	return f.Elem().Int(), true
}

// fatal wraps a cause into the *PartitionError ReadRange returns.
func (r *rangeReader) fatal(err error) error {
	if errors.Is(err, sarama.ErrClosedClient) {
		return r.errorf("%w (%w)", ErrClosed, err)
	}
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		err = fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	return &PartitionError{Topic: r.topic, Partition: r.partition, Err: fmt.Errorf("read at offset %d: %w", r.next, err)}
}

// errorf formats an error about the read that is not the partition's.
func (r *rangeReader) errorf(format string, args ...any) error {
	return fmt.Errorf("kafka: read %s/%d at offset %d of [.., %d): %w", r.topic, r.partition, r.next, r.to, fmt.Errorf(format, args...))
}
