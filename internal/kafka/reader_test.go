package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// readRange collects what ReadRange delivers.
func readRange(ctx context.Context, a *kafka.Admin, topic string, partition int32, from, to int64, readCommitted bool) ([]kafka.Record, error) {
	var got []kafka.Record
	err := a.ReadRange(ctx, topic, partition, from, to, readCommitted, func(r kafka.Record) error {
		got = append(got, r)
		return nil
	})
	return got, err
}

// offsetsAndValues renders records as "offset:value".
func offsetsAndValues(recs []kafka.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return out
}

// millis truncates timestamps to what Kafka stores, for comparisons.
func millis(recs []kafka.Record) []kafka.Record {
	out := make([]kafka.Record, len(recs))
	for i, r := range recs {
		r.Timestamp = time.UnixMilli(r.Timestamp.UnixMilli())
		out[i] = r
	}
	return out
}

func TestReadRange(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()

		base := time.UnixMilli(1_700_000_000_123)
		recs := make([]kafka.Record, 10)
		for i := range recs {
			recs[i] = kafka.Record{
				Topic: topic, Partition: 1,
				Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
				Timestamp: base.Add(time.Duration(i) * time.Second),
			}
		}
		recs[0].Key = nil        // null key
		recs[1].Value = []byte{} // empty, not null
		recs[2].Value = nil      // tombstone
		recs[3].Headers = []kafka.Header{{Key: "h", Value: []byte("x")}, {Key: "null", Value: nil}, {Key: "h", Value: []byte{}}}
		produced := millis(kafkatest.Produce(t, env, recs...))
		for i, r := range produced {
			require.EqualValues(t, i, r.Offset)
		}

		for _, rc := range []bool{false, true} {
			got, err := readRange(ctx, a, topic, 1, 0, 10, rc)
			require.NoError(t, err)
			require.Equal(t, produced, millis(got), "readCommitted=%v", rc)
			require.Nil(t, got[0].Key)
			require.NotNil(t, got[1].Value)
			require.Nil(t, got[2].Value)
		}

		got, err := readRange(ctx, a, topic, 1, 3, 7, true)
		require.NoError(t, err)
		require.Equal(t, produced[3:7], millis(got), "sub-range")

		got, err = readRange(ctx, a, topic, 1, 9, 10, false)
		require.NoError(t, err)
		require.Equal(t, produced[9:], millis(got), "last record")

		for _, r := range [][2]int64{{4, 4}, {0, 0}, {7, 3}} {
			err := a.ReadRange(ctx, topic, 1, r[0], r[1], true, func(kafka.Record) error {
				t.Fatalf("record delivered for [%d, %d)", r[0], r[1])
				return nil
			})
			require.NoError(t, err, "[%d, %d)", r[0], r[1])
		}

		t.Run("fn error stops", func(t *testing.T) {
			stop := errors.New("stop")
			var n int
			err := a.ReadRange(ctx, topic, 1, 0, 10, true, func(kafka.Record) error {
				if n++; n == 3 {
					return stop
				}
				return nil
			})
			require.ErrorIs(t, err, stop)
			require.Equal(t, 3, n)
		})

		t.Run("ctx", func(t *testing.T) {
			// to is past the end: ReadRange waits for records that never
			// come, until ctx is done.
			tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			got, err := readRange(tctx, a, topic, 1, 0, 20, false)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Equal(t, produced, millis(got), "everything there was delivered")

			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			var n int
			err = a.ReadRange(cctx, topic, 1, 0, 20, false, func(kafka.Record) error {
				n++
				cancel()
				return nil
			})
			require.ErrorIs(t, err, context.Canceled)
			require.GreaterOrEqual(t, n, 1)
		})

		t.Run("unknown topic", func(t *testing.T) {
			start := time.Now()
			_, err := readRange(ctx, a, topic+"-missing", 0, 0, 1, true)
			require.ErrorIs(t, err, kafka.ErrUnknownTopic)
			var pe *kafka.PartitionError
			require.ErrorAs(t, err, &pe)
			t.Logf("unknown topic reported after %v", time.Since(start))
		})
	})
}

// txnClient returns a transactional kgo producer writing to partition 0
// of topic.
func txnClient(t *testing.T, env *kafkatest.Env, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(env.Brokers...),
		kgo.TransactionalID(kafkatest.Topic(t)),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(50*time.Millisecond),
	)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn writes one record (its own batch) in cl's open transaction
// and returns its offset.
func produceTxn(t *testing.T, cl *kgo.Client, value string) int64 {
	t.Helper()
	res := cl.ProduceSync(t.Context(), &kgo.Record{Partition: 0, Value: []byte(value)})
	require.NoError(t, res.FirstErr())
	return res[0].Record.Offset
}

// waitSettled waits until every transaction marker is written: the end
// and the last stable offset of the partition are both want. (Kafka writes
// markers after EndTxn answers.)
func waitSettled(t *testing.T, a *kafka.Admin, topic string, partition int32, want int64) {
	t.Helper()
	p := []int32{partition}
	require.Eventually(t, func() bool {
		end, err := a.EndOffsets(t.Context(), topic, p)
		if err != nil || end[partition] != want {
			return false
		}
		stable, err := a.StableOffsets(t.Context(), topic, p)
		return err == nil && stable[partition] == want
	}, kafkatest.Timeout, 10*time.Millisecond, "partition end and stable offset never reached %d", want)
}

// TestReadRangeEndsAtCommitMarker reads a partition whose last offset is a
// commit marker, which no consumer ever receives: ReadRange must return as
// soon as the marker's batch is fetched, with every record.
func TestReadRangeEndsAtCommitMarker(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()

		cl := txnClient(t, env, topic)
		require.NoError(t, cl.BeginTransaction())
		var want []string
		for i := range 5 {
			off := produceTxn(t, cl, fmt.Sprintf("c%d", i))
			want = append(want, fmt.Sprintf("%d:c%d", off, i))
		}
		require.NoError(t, cl.EndTransaction(t.Context(), kgo.TryCommit))
		waitSettled(t, a, topic, 0, 6) // 5 records + the commit marker

		start := time.Now()
		got, err := readRange(t.Context(), a, topic, 0, 0, 6, true)
		took := time.Since(start)
		require.NoError(t, err)
		require.Equal(t, want, offsetsAndValues(got))
		t.Logf("read_committed [0, 6) ending at a commit marker took %v", took)
		// A sanity check, not a benchmark: the old reader waited 500 ms
		// for a record that never comes.
		require.Less(t, took, 300*time.Millisecond)

		got, err = readRange(t.Context(), a, topic, 0, 0, 6, false)
		require.NoError(t, err)
		require.Equal(t, want, offsetsAndValues(got), "read_uncommitted never delivers markers either")
		got, err = readRange(t.Context(), a, topic, 0, 5, 6, true)
		require.NoError(t, err)
		require.Empty(t, got, "a range holding only the marker")
	})
}

// TestReadRangeAbortedTransactions interleaves an aborted transaction with
// a committed one of another producer on the same partition, then commits
// and aborts again, with a non-transactional record in between, and checks
// every sub-range under both isolation levels.
func TestReadRangeAbortedTransactions(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()

		type rec struct {
			offset    int64
			value     string
			committed bool
		}
		var data []rec
		produce := func(cl *kgo.Client, value string, committed bool) {
			data = append(data, rec{produceTxn(t, cl, value), value, committed})
		}
		ca, cb := txnClient(t, env, topic), txnClient(t, env, topic)
		require.NoError(t, ca.BeginTransaction())
		require.NoError(t, cb.BeginTransaction())
		produce(ca, "a1", false)
		produce(cb, "b1", true)
		produce(ca, "a2", false)
		produce(cb, "b2", true)
		require.NoError(t, ca.EndTransaction(t.Context(), kgo.TryAbort))
		require.NoError(t, cb.EndTransaction(t.Context(), kgo.TryCommit))

		require.NoError(t, ca.BeginTransaction()) // a's producer again, committing
		produce(ca, "a3", true)
		require.NoError(t, ca.EndTransaction(t.Context(), kgo.TryCommit))
		p := kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("p1")})
		data = append(data, rec{p[0].Offset, "p1", true})
		require.NoError(t, ca.BeginTransaction())
		produce(ca, "a4", false)
		require.NoError(t, ca.EndTransaction(t.Context(), kgo.TryAbort)) // the log ends with an abort marker

		const end = 7 + 4 // data records + markers
		waitSettled(t, a, topic, 0, end)

		want := func(from, to int64, readCommitted bool) []string {
			out := []string{}
			for _, r := range data {
				if r.offset >= from && r.offset < to && (r.committed || !readCommitted) {
					out = append(out, fmt.Sprintf("%d:%s", r.offset, r.value))
				}
			}
			return out
		}
		got, err := readRange(t.Context(), a, topic, 0, 0, end, true)
		require.NoError(t, err)
		require.Len(t, got, 4)
		require.Equal(t, want(0, end, true), offsetsAndValues(got))
		got, err = readRange(t.Context(), a, topic, 0, 0, end, false)
		require.NoError(t, err)
		require.Len(t, got, 7)
		require.Equal(t, want(0, end, false), offsetsAndValues(got))

		// Every sub-range, including those starting inside the aborted
		// transaction (the broker then lists it for a later fetch offset).
		for from := int64(0); from <= end; from++ {
			for to := from; to <= end; to++ {
				for _, rc := range []bool{true, false} {
					got, err := readRange(t.Context(), a, topic, 0, from, to, rc)
					require.NoError(t, err)
					require.Equal(t, want(from, to, rc), offsetsAndValues(got), "[%d, %d) readCommitted=%v", from, to, rc)
				}
			}
		}
	})
}

// TestReadRangeDeletedRecords reads a partition whose log start moved: the
// range from StartOffsets, a range from below it (ReadRange goes on from
// the log start and says so), a range wholly deleted, and one past the end.
func TestReadRangeDeletedRecords(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		var logs syncBuffer
		cfg := env.Config()
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		a, err := kafka.NewAdmin(cfg)
		require.NoError(t, err)
		defer a.Close()

		var recs []kafka.Record
		for i := range 10 {
			recs = append(recs, kafka.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
		}
		kafkatest.Produce(t, env, recs...)
		deleteRecordsBefore(t, env, topic, 0, 4)

		starts, err := a.StartOffsets(ctx, topic, nil)
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 4}, starts)
		want := []string{"4:v4", "5:v5", "6:v6", "7:v7", "8:v8", "9:v9"}

		got, err := readRange(ctx, a, topic, 0, starts[0], 10, true)
		require.NoError(t, err)
		require.Equal(t, want, offsetsAndValues(got))
		require.Empty(t, logs.String())

		got, err = readRange(ctx, a, topic, 0, 0, 10, true)
		require.NoError(t, err)
		require.Equal(t, want, offsetsAndValues(got), "from below the log start")
		require.Contains(t, logs.String(), "log_start=4")

		got, err = readRange(ctx, a, topic, 0, 1, 3, false)
		require.NoError(t, err)
		require.Empty(t, got, "the whole range is deleted")

		_, err = readRange(ctx, a, topic, 0, 11, 12, false)
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, topic, pe.Topic)
		require.ErrorIs(t, err, sarama.ErrOffsetOutOfRange)
	})
}

func deleteRecordsBefore(t *testing.T, env *kafkatest.Env, topic string, partition int32, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.MetadataMinAge(50*time.Millisecond))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The tests below script the broker's fetch responses with sarama's mock
// broker, for what a real broker only does in corner cases: compaction's
// offset gaps and empty batches, legacy message sets, log-append time, a
// leader move.

const mockTopic = "scripted"

// mockAdmin starts a mock broker leading partition 0 of mockTopic whose
// fetch responses are fetches in turn (the last one repeats), and an Admin
// on it.
func mockAdmin(t *testing.T, fetches ...any) (*kafka.Admin, *sarama.MockBroker) {
	t.Helper()
	b := sarama.NewMockBroker(t, 1)
	t.Cleanup(b.Close)
	var keys []sarama.ApiVersionsResponseKey
	for k := range int16(80) {
		keys = append(keys, sarama.ApiVersionsResponseKey{ApiKey: k, MinVersion: 0, MaxVersion: 20})
	}
	b.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys(keys),
		"MetadataRequest": sarama.NewMockMetadataResponse(t).
			SetBroker(b.Addr(), b.BrokerID()).
			SetController(b.BrokerID()).
			SetLeader(mockTopic, 0, b.BrokerID()),
		"FetchRequest": sarama.NewMockSequence(fetches...),
	})
	// The mock broker speaks sarama's protocol versions only: these tests
	// are the sarama reader's, whichever client the environment names.
	a, err := kafka.NewAdmin(kafka.Config{Brokers: []string{b.Addr()}, ClientID: "weir-test", Client: kafka.ClientSarama})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a, b
}

// fetchResponse is a Fetch v11 response for partition 0 of mockTopic.
func fetchResponse(end int64, sets ...*sarama.Records) *sarama.FetchResponse {
	r := &sarama.FetchResponse{Version: 11}
	r.AddError(mockTopic, 0, sarama.ErrNoError)
	block := r.GetBlock(mockTopic, 0)
	block.HighWaterMarkOffset, block.LastStableOffset = end, end
	block.RecordsSet = sets
	return r
}

// batch is a record batch from firstOffset to lastOffset holding records
// at the given offsets, valued "v<offset>".
func batch(firstOffset, lastOffset int64, offsets ...int64) *sarama.Records {
	b := &sarama.RecordBatch{
		Version: 2, FirstOffset: firstOffset, LastOffsetDelta: int32(lastOffset - firstOffset),
		FirstTimestamp: time.UnixMilli(1_000_000), MaxTimestamp: time.UnixMilli(1_000_000 + lastOffset - firstOffset),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		Records: []*sarama.Record{},
	}
	for _, off := range offsets {
		b.Records = append(b.Records, &sarama.Record{
			OffsetDelta:    off - firstOffset,
			TimestampDelta: time.Duration(off-firstOffset) * time.Millisecond,
			Key:            fmt.Appendf(nil, "k%d", off),
			Value:          fmt.Appendf(nil, "v%d", off),
		})
	}
	return &sarama.Records{RecordBatch: b}
}

// fail is the response past the end of a script: an unexpected fetch then
// fails the read.
func fail() *sarama.FetchResponse {
	r := &sarama.FetchResponse{Version: 11}
	r.AddError(mockTopic, 0, sarama.ErrInvalidMessage)
	return r
}

// fetchRequests returns the Fetch requests the mock broker received.
func fetchRequests(b *sarama.MockBroker) []*sarama.FetchRequest {
	var out []*sarama.FetchRequest
	for _, rr := range b.History() {
		if req, ok := rr.Request.(*sarama.FetchRequest); ok {
			out = append(out, req)
		}
	}
	return out
}

// TestReadRangeCompactionGaps steps over offsets compaction removed and
// over batches it emptied — which sarama decodes but leaves out of the
// response's RecordsSet, also when they are all a response holds.
func TestReadRangeCompactionGaps(t *testing.T) {
	a, b := mockAdmin(t,
		fetchResponse(20, batch(0, 3, 0, 2)),                    // 1 and 3 compacted away
		fetchResponse(20, batch(4, 9)),                          // only an empty batch
		fetchResponse(20, batch(10, 11), batch(12, 14, 13)),     // an empty batch, then a gap
		fetchResponse(20, batch(15, 16, 15, 16), batch(17, 19)), // ends with an empty batch
		fetchResponse(20, batch(17, 19)),                        // the empty batch again, alone
		fail(),
	)
	got, err := readRange(t.Context(), a, mockTopic, 0, 0, 20, true)
	require.NoError(t, err)
	require.Equal(t, []string{"0:v0", "2:v2", "13:v13", "15:v15", "16:v16"}, offsetsAndValues(got))
	reqs := fetchRequests(b)
	require.Len(t, reqs, 5)
	for _, req := range reqs {
		require.EqualValues(t, 11, req.Version)
		require.Equal(t, sarama.ReadCommitted, req.Isolation)
		require.EqualValues(t, 100, req.MaxWaitTime)
		require.EqualValues(t, 64<<10, req.MaxBytes, "a fetch sized to a 20-record range asks for the least")
		require.EqualValues(t, -1, req.SessionEpoch)
	}
	require.Equal(t, []byte("k13"), got[2].Key)
	require.Equal(t, time.UnixMilli(1_000_001), got[2].Timestamp, "first timestamp + delta")
}

// TestReadRangeSizesFetchesToTheRange: a long range asks for at most 4 MiB,
// a short one about twice what its records take at the size seen so far.
func TestReadRangeSizesFetchesToTheRange(t *testing.T) {
	a, b := mockAdmin(t,
		fetchResponse(1_000_000, batch(0, 0, 0)),
		fetchResponse(1_000_000, batch(1, 1, 1)),
		fail(),
	)
	_, err := readRange(t.Context(), a, mockTopic, 0, 0, 1_000_000, false)
	require.Error(t, err, "the script ends before the range")
	reqs := fetchRequests(b)
	require.GreaterOrEqual(t, len(reqs), 2)
	require.EqualValues(t, 4<<20, reqs[0].MaxBytes, "a million records at the first guess: the cap")
	// After record 0 ("k0"/"v0": 4 bytes + 16 of overhead) 999,999 records
	// still take far more than 4 MiB at 2×20 bytes each: still the cap.
	require.EqualValues(t, 4<<20, reqs[1].MaxBytes)

	rest := make([]int64, 0, 2999)
	for off := int64(1); off < 3000; off++ {
		rest = append(rest, off)
	}
	a, b = mockAdmin(t,
		fetchResponse(3000, batch(0, 0, 0)),
		fetchResponse(3000, batch(1, 2999, rest...)),
		fail(),
	)
	got, err := readRange(t.Context(), a, mockTopic, 0, 0, 3000, false)
	require.NoError(t, err)
	require.Len(t, got, 3000)
	reqs = fetchRequests(b)
	require.Len(t, reqs, 2)
	require.EqualValues(t, 2*256*3000, reqs[0].MaxBytes, "3,000 records at the 256-byte guess")
	require.EqualValues(t, 2*20*2999, reqs[1].MaxBytes, "2,999 records at the 20 bytes of record 0")

	a, b = mockAdmin(t, fetchResponse(10, batch(0, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)), fail())
	got, err = readRange(t.Context(), a, mockTopic, 0, 0, 10, false)
	require.NoError(t, err)
	require.Len(t, got, 10)
	require.EqualValues(t, 64<<10, fetchRequests(b)[0].MaxBytes, "a short range: the least")
}

// TestReadRangeAbortedList scripts what a broker answers read_committed:
// aborted data with the list of aborted transactions.
func TestReadRangeAbortedList(t *testing.T) {
	const pa, pb = 7, 8
	r := fetchResponse(8)
	r.AddRecordBatch(mockTopic, 0, nil, sarama.StringEncoder("a1"), 0, pa, true)
	r.AddRecordBatch(mockTopic, 0, nil, sarama.StringEncoder("b1"), 1, pb, true)
	r.AddRecordBatch(mockTopic, 0, nil, sarama.StringEncoder("n1"), 2, -1, false)
	r.AddRecordBatch(mockTopic, 0, nil, sarama.StringEncoder("a2"), 3, pa, true)
	r.AddControlRecord(mockTopic, 0, 4, pa, sarama.ControlRecordAbort)
	r.AddControlRecord(mockTopic, 0, 5, pb, sarama.ControlRecordCommit)
	r.AddRecordBatch(mockTopic, 0, nil, sarama.StringEncoder("a3"), 6, pa, true) // after the abort marker: committed
	r.AddControlRecord(mockTopic, 0, 7, pa, sarama.ControlRecordCommit)
	r.GetBlock(mockTopic, 0).AbortedTransactions = []*sarama.AbortedTransaction{{ProducerID: pa, FirstOffset: 0}}

	for _, tc := range []struct {
		readCommitted bool
		want          []string
	}{
		{true, []string{"1:b1", "2:n1", "6:a3"}},
		{false, []string{"0:a1", "1:b1", "2:n1", "3:a2", "6:a3"}},
	} {
		a, b := mockAdmin(t, r, fail())
		got, err := readRange(t.Context(), a, mockTopic, 0, 0, 8, tc.readCommitted)
		require.NoError(t, err)
		require.Equal(t, tc.want, offsetsAndValues(got), "readCommitted=%v", tc.readCommitted)
		require.Len(t, fetchRequests(b), 1)
	}
}

// TestReadRangeInsideBatch starts and ends inside a batch, whose records
// have the log-append time of the batch, and headers.
func TestReadRangeInsideBatch(t *testing.T) {
	recs := batch(10, 14, 10, 11, 12, 13, 14)
	recs.RecordBatch.LogAppendTime = true
	recs.RecordBatch.MaxTimestamp = time.UnixMilli(2_000_000)
	recs.RecordBatch.Records[2].Headers = []*sarama.RecordHeader{{Key: []byte("h"), Value: []byte("x")}}
	a, b := mockAdmin(t, fetchResponse(15, recs), fail())
	got, err := readRange(t.Context(), a, mockTopic, 0, 11, 14, false)
	require.NoError(t, err)
	require.Equal(t, []string{"11:v11", "12:v12", "13:v13"}, offsetsAndValues(got))
	for _, r := range got {
		require.Equal(t, time.UnixMilli(2_000_000), r.Timestamp)
		require.Equal(t, mockTopic, r.Topic)
		require.EqualValues(t, 0, r.Partition)
	}
	require.Equal(t, []kafka.Header{{Key: "h", Value: []byte("x")}}, got[1].Headers)
	require.Len(t, fetchRequests(b), 1)
}

// TestReadRangeLegacyMessageSet reads message formats v0 and v1.
func TestReadRangeLegacyMessageSet(t *testing.T) {
	r := fetchResponse(3)
	r.AddMessageWithTimestamp(mockTopic, 0, sarama.StringEncoder("k0"), sarama.StringEncoder("v0"), 0, time.Time{}, 0)
	r.AddMessageWithTimestamp(mockTopic, 0, nil, sarama.StringEncoder("v1"), 1, time.UnixMilli(5_000), 1)
	r.AddMessageWithTimestamp(mockTopic, 0, nil, sarama.StringEncoder("v2"), 2, time.UnixMilli(6_000), 1)
	a, _ := mockAdmin(t, r, fail())
	got, err := readRange(t.Context(), a, mockTopic, 0, 0, 3, true)
	require.NoError(t, err)
	require.Equal(t, []string{"0:v0", "1:v1", "2:v2"}, offsetsAndValues(got))
	require.Equal(t, []byte("k0"), got[0].Key)
	require.True(t, got[0].Timestamp.IsZero())
	require.Equal(t, time.UnixMilli(6_000), got[2].Timestamp)

	a, _ = mockAdmin(t, r, fail())
	got, err = readRange(t.Context(), a, mockTopic, 0, 1, 2, false)
	require.NoError(t, err)
	require.Equal(t, []string{"1:v1"}, offsetsAndValues(got))
}

// TestReadRangeRetriesLeaderMove retries NOT_LEADER after a metadata
// refresh, and fails on an error no refresh cures.
func TestReadRangeRetriesLeaderMove(t *testing.T) {
	notLeader := &sarama.FetchResponse{Version: 11}
	notLeader.AddError(mockTopic, 0, sarama.ErrNotLeaderForPartition)
	a, b := mockAdmin(t, notLeader, fetchResponse(2, batch(0, 1, 0, 1)), fail())
	got, err := readRange(t.Context(), a, mockTopic, 0, 0, 2, true)
	require.NoError(t, err)
	require.Equal(t, []string{"0:v0", "1:v1"}, offsetsAndValues(got))
	require.Len(t, fetchRequests(b), 2)

	denied := &sarama.FetchResponse{Version: 11}
	denied.AddError(mockTopic, 0, sarama.ErrTopicAuthorizationFailed)
	a, b = mockAdmin(t, denied)
	_, err = readRange(t.Context(), a, mockTopic, 0, 0, 2, true)
	var pe *kafka.PartitionError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, mockTopic, pe.Topic)
	require.ErrorIs(t, err, sarama.ErrTopicAuthorizationFailed)
	require.Len(t, fetchRequests(b), 1)
}

// TestReadRangeClosedAdmin reports ErrClosed.
func TestReadRangeClosedAdmin(t *testing.T) {
	a, _ := mockAdmin(t, fail())
	require.NoError(t, a.Close())
	_, err := readRange(t.Context(), a, mockTopic, 0, 0, 1, true)
	require.ErrorIs(t, err, kafka.ErrClosed)
}
