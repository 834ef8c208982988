package kafka_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// abortLog writes transactions of several producers to partition 0 of a
// topic and remembers which records a read_committed reader must see.
type abortLog struct {
	t     *testing.T
	env   *kafkatest.Env
	topic string

	mu        sync.Mutex
	committed []string // "offset:rNNNNN" of every committed record
	aborted   []int64  // first offsets of the aborted transactions
	n         int
}

// producer returns a transactional producer with the given id (a new
// client with an id in use fences the one before it).
func (l *abortLog) producer(id string, opts ...kgo.Opt) *kgo.Client {
	l.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(l.env.Brokers...),
		kgo.TransactionalID(id),
		kgo.DefaultProduceTopic(l.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(16 << 10), // several batches per transaction
		kgo.MetadataMinAge(50 * time.Millisecond),
	}, opts...)...)
	require.NoError(l.t, err)
	l.t.Cleanup(cl.Close)
	return cl
}

// produce writes n records of about 1 KiB in cl's open transaction and
// returns them as "offset:rNNNNN" (the value's name).
func (l *abortLog) produce(cl *kgo.Client, n int) []string {
	l.t.Helper()
	var recs []*kgo.Record
	for range n {
		l.mu.Lock()
		l.n++
		v := fmt.Sprintf("r%05d-%01000d", l.n, 0)
		l.mu.Unlock()
		recs = append(recs, &kgo.Record{Partition: 0, Value: []byte(v)})
	}
	res := cl.ProduceSync(l.t.Context(), recs...)
	require.NoError(l.t, res.FirstErr())
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = fmt.Sprintf("%d:%s", r.Record.Offset, r.Record.Value[:6])
	}
	return out
}

func (l *abortLog) commit(recs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.committed = append(l.committed, recs...)
}

func (l *abortLog) abort(recs []string) {
	var first int64
	_, _ = fmt.Sscanf(recs[0], "%d:", &first)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.aborted = append(l.aborted, first)
}

// want is what read_committed [from, to) must deliver.
func (l *abortLog) want(from, to int64) []string {
	out := []string{}
	for _, r := range l.committed {
		var off int64
		_, _ = fmt.Sscanf(r, "%d:", &off)
		if off >= from && off < to {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		var x, y int64
		_, _ = fmt.Sscanf(a, "%d:", &x)
		_, _ = fmt.Sscanf(b, "%d:", &y)
		return int(x - y)
	})
	return out
}

// TestReadRangeSkipsLargeAbortedTransactions reads, read_committed, a
// partition where aborted transactions of hundreds of kilobytes — more than
// one fetch response — interleave with committed ones of other producers:
// aborted by the producer, fenced by a new producer with the same
// transactional id, and aborted by the broker's transaction timeout. Every
// range must deliver exactly the committed records, whether it starts just
// before, at or inside an aborted transaction.
//
// This pins third_party/kfake patch 3: a fetch response cut short by the
// request's byte bound still carries the aborted-transaction list. The
// range reader's fetches are such responses whenever a range holds more
// than one; without the list a micro-batch reads a repartition topic's
// aborted records as committed.
func TestReadRangeSkipsLargeAbortedTransactions(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()
		l := &abortLog{t: t, env: env, topic: topic}
		ctx := t.Context()

		base := kafkatest.Topic(t)
		pa, pb := l.producer(base+"-a"), l.producer(base+"-b")

		// 1. a commits, then aborts 300 records while b commits 100 in
		// the middle of them.
		require.NoError(t, pa.BeginTransaction())
		l.commit(l.produce(pa, 50))
		require.NoError(t, pa.EndTransaction(ctx, kgo.TryCommit))
		require.NoError(t, pa.BeginTransaction())
		require.NoError(t, pb.BeginTransaction())
		abortedA := l.produce(pa, 150)
		l.commit(l.produce(pb, 100))
		abortedA = append(abortedA, l.produce(pa, 150)...)
		require.NoError(t, pb.EndTransaction(ctx, kgo.TryCommit))
		require.NoError(t, pa.EndTransaction(ctx, kgo.TryAbort))
		l.abort(abortedA)

		// 2. c's open transaction of 300 records is fenced by a new
		// producer with c's transactional id, which commits 100.
		pc := l.producer(base + "-c")
		require.NoError(t, pc.BeginTransaction())
		l.abort(l.produce(pc, 300))
		pc2 := l.producer(base + "-c")
		require.NoError(t, pc2.BeginTransaction())
		l.commit(l.produce(pc2, 100))
		require.NoError(t, pc2.EndTransaction(ctx, kgo.TryCommit))

		// 3. d's transaction of 300 records outlives its timeout: the
		// broker aborts it (Kafka checks every 10 s by default).
		pd := l.producer(base+"-d", kgo.TransactionTimeout(time.Second))
		require.NoError(t, pd.BeginTransaction())
		l.abort(l.produce(pd, 300))
		require.NoError(t, pb.BeginTransaction())
		l.commit(l.produce(pb, 50))
		require.NoError(t, pb.EndTransaction(ctx, kgo.TryCommit))

		// The log is settled once d's transaction is aborted: end and
		// last stable offset agree.
		var end int64
		require.Eventually(t, func() bool {
			ends, err := a.EndOffsets(ctx, topic, []int32{0})
			if err != nil {
				return false
			}
			stable, err := a.StableOffsets(ctx, topic, []int32{0})
			end = ends[0]
			return err == nil && stable[0] == end
		}, 60*time.Second, 100*time.Millisecond, "the timed-out transaction was never aborted")

		check := func(from, to int64) {
			t.Helper()
			got, err := readRange(ctx, a, topic, 0, from, to, true)
			require.NoError(t, err)
			names := []string{}
			for _, r := range got {
				names = append(names, fmt.Sprintf("%d:%s", r.Offset, r.Value[:6]))
			}
			require.Equal(t, l.want(from, to), names, "read_committed [%d, %d)", from, to)
		}
		check(0, end)
		for _, first := range l.aborted {
			for _, from := range []int64{first - 1, first, first + 1, first + 120} {
				check(max(from, 0), end)
				check(max(from, 0), min(from+200, end))
			}
		}
		require.Len(t, l.want(0, end), 50+100+100+50)
	})
}
