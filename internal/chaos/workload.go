package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Keys is the number of accounts (record keys) of the workload.
const Keys = 1000

// Partitions of the input and output topics.
const Partitions = 8

// Txn is one input record's value: a unique id, the account's running
// sequence number K (1, 2, ... per key over all its records, bad ones
// included) and an amount. Fail asks the validating processor to fail;
// Big asks the copy stage for an output too large to produce.
type Txn struct {
	ID     int64  `json:"id"`
	Key    string `json:"key"`
	K      int64  `json:"k"`
	Amount int64  `json:"amount"`
	Fail   bool   `json:"fail,omitempty"`
	Big    bool   `json:"big,omitempty"`
	Pad    string `json:"pad,omitempty"`
}

// Agg is the running aggregate of one account. Replays counts inputs
// whose K was not above LastK — a record the aggregate saw again (after
// an at-least-once replay); they are not folded, so Count, Sum, Min, Max,
// LastK and LastID stay the fold of distinct inputs, and the verifier
// counts the replay as a duplicate output.
type Agg struct {
	Count   int64 `json:"count"`
	Sum     int64 `json:"sum"`
	Min     int64 `json:"min"`
	Max     int64 `json:"max"`
	LastK   int64 `json:"lastK"`
	LastID  int64 `json:"lastID"`
	Replays int64 `json:"replays,omitempty"`
}

// Fold adds one input to an aggregate.
func Fold(a Agg, t Txn) Agg {
	if t.K <= a.LastK {
		a.Replays++
		return a
	}
	if a.Count == 0 || t.Amount < a.Min {
		a.Min = t.Amount
	}
	if a.Count == 0 || t.Amount > a.Max {
		a.Max = t.Amount
	}
	a.Count++
	a.Sum += t.Amount
	a.LastK, a.LastID = t.K, t.ID
	return a
}

// sameFold compares the folded fields (not Replays).
func sameFold(a, b Agg) bool {
	a.Replays, b.Replays = 0, 0
	return a == b
}

// Kind of an input record.
type Kind uint8

const (
	// Good records reach every output.
	Good Kind = iota
	// Undeserializable values fail the source's JSON decoding.
	Undeserializable
	// ProcessorError records are rejected by the validating processor.
	ProcessorError
	// Oversized records make the copy stage's output too large.
	Oversized
)

// Input is one generated input record.
type Input struct {
	Txn
	Kind Kind
}

// Value returns the record's value bytes.
func (in Input) Value() []byte {
	if in.Kind == Undeserializable {
		return []byte("!undeserializable:" + strconv.FormatInt(in.ID, 10))
	}
	b, err := serde.JSON[Txn]().Serialize("", in.Txn)
	if err != nil {
		panic(err) // a Txn always encodes
	}
	return b
}

// IDOf returns the id in an input value (good or not).
func IDOf(v []byte) (int64, error) {
	if s, ok := strings.CutPrefix(string(v), "!undeserializable:"); ok {
		return strconv.ParseInt(s, 10, 64)
	}
	t, err := serde.JSON[Txn]().Deserialize("", v)
	if err != nil {
		return 0, err
	}
	return t.ID, nil
}

// Generate returns n input records from seed: ids 1..n, keys uniform over
// Keys accounts, 1% undeserializable, 0.1% processor errors, 0.1%
// oversized outputs.
func Generate(seed uint64, n int) []Input {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	seq := make([]int64, Keys)
	out := make([]Input, n)
	for i := range out {
		k := rng.IntN(Keys)
		seq[k]++
		in := Input{Txn: Txn{ID: int64(i + 1), Key: KeyName(k), K: seq[k], Amount: rng.Int64N(2001) - 1000}}
		switch r := rng.IntN(1000); {
		case r < 10:
			in.Kind = Undeserializable
		case r == 10:
			in.Kind, in.Fail = ProcessorError, true
		case r == 11:
			in.Kind, in.Big = Oversized, true
		}
		out[i] = in
	}
	return out
}

// KeyName names account k.
func KeyName(k int) string { return fmt.Sprintf("acct-%04d", k) }

// Topics are the topics of one scenario. The others are set only in an
// extended workload (Config.Extended): Regions is an input, the regions
// table (RegionKey(i) → RegionName(i)), which the runner fills before the
// instances start; the rest are outputs.
type Topics struct {
	In, Copy, Agg, Win, Pairs, Sessions          string
	Regions, RegionTotals, AccountRegions, Outer string
}

// Extended reports whether the workload has the windowed aggregate, the
// joins, the session aggregate and the re-grouping.
func (t Topics) Extended() bool { return t.Win != "" }

// outputs returns the workload's output topics after the given ones.
func (t Topics) outputs(first ...string) []string {
	out := append(first, t.Copy, t.Agg)
	if t.Extended() {
		out = append(out, t.Win, t.Pairs, t.Sessions, t.RegionTotals, t.AccountRegions, t.Outer)
	}
	return out
}

// Store is the aggregate's store name, WindowStore the windowed
// aggregate's, and Repartition the name of the repartition stage.
const (
	Store        = "agg"
	WindowStore  = "win"
	Join         = "pairs"
	SessionStore = "sessions"
	Repartition  = "by-key"
	// The extended workload's table branches and outer join (branches.go):
	// the re-grouping by region (its repartition topic and node), the
	// region totals' store, the regions table's store, the foreign-key
	// join, and the outer join.
	Regroup      = "by-region"
	RegionStore  = "region-totals"
	RegionsTable = "regions"
	FKJoin       = "account-regions"
	OuterJoin    = "outer"
)

// Window is the windowed aggregate's tumbling window: input record id
// falls in the window starting at baseTime + id ms rounded down to it
// (about 5 windows an account in a 50,000-record run). WindowGrace admits
// every record whatever the order it arrives in, so no record is late and
// each window's outputs are a fold the verifier can recompute.
const (
	Window      = 10 * time.Second
	WindowGrace = 24 * time.Hour
)

// JoinWithin is the stream-stream join's time difference: an account's
// even-id and odd-id inputs whose ids (their timestamps in ms) differ by
// at most JoinWithin's milliseconds make a pair; with WindowGrace no
// record is ever too late to pair.
const JoinWithin = 2 * time.Second

// SessionGap is the session windows' inactivity gap: an account's inputs
// whose ids (their timestamps in ms) follow each other within SessionGap's
// milliseconds are one session (about 2.7 inputs a session in a
// 50,000-record run). The grace is WindowGrace.
const SessionGap = time.Second

// SessionKey is the session aggregate's output key for an account's
// session from input id first to input id last.
func SessionKey(key string, first, last int64) string {
	return topology.Windowed[string]{Key: key, Start: stamp(first), End: stamp(last)}.String()
}

// stamp is input id's timestamp.
func stamp(id int64) time.Time { return baseTime.Add(time.Duration(id) * time.Millisecond) }

// Merge combines the aggregates of two sessions a record bridges, a the
// earlier, keeping Fold's rules: b's inputs count as replays unless they
// are newer than a's. (An account's inputs reach its task in order, a
// replay included, so no record of this workload should bridge two
// sessions.)
func Merge(a, b Agg) Agg {
	switch {
	case a.Count == 0:
		b.Replays += a.Replays
		return b
	case b.Count == 0 || b.LastK <= a.LastK:
		a.Replays += b.Replays + b.Count
		return a
	}
	a.Min, a.Max = min(a.Min, b.Min), max(a.Max, b.Max)
	a.Count, a.Sum, a.Replays = a.Count+b.Count, a.Sum+b.Sum, a.Replays+b.Replays
	a.LastK, a.LastID = b.LastK, b.LastID
	return a
}

// PairValue is the join's output value for the even-id input even and the
// odd-id input odd of one account.
func PairValue(even, odd int64) string {
	return strconv.FormatInt(even, 10) + ":" + strconv.FormatInt(odd, 10)
}

// WindowKey is the windowed aggregate's output key for an account's
// window holding input id: "key@[start,end)" in epoch milliseconds.
func WindowKey(key string, id int64) string {
	ms := stamp(id).UnixMilli()
	start := time.UnixMilli(ms - ms%Window.Milliseconds())
	return topology.Windowed[string]{Key: key, Start: start, End: start.Add(Window)}.String()
}

// padBytes makes an oversized record's copy larger than any producer
// delivers.
const padBytes = kafka.MaxRecordBytes + 1

// Build returns the workload's topology:
//
//	in ─► validate ─┬─► copy ─► Copy topic            (a) a copy
//	                └─► repartition by key ─┬─► aggregate (store "agg") ─► Agg topic   (b), (c)
//	                                        ├─► aggregate per Window (store "win") ─► Win topic
//	                                        ├─► even ids ⋈ odd ids within JoinWithin ─► Pairs topic
//	                                        ├─► aggregate per session (store "sessions") ─► Sessions topic
//	                                        └─► even ids ⟗ odd ids within JoinWithin, grace OuterGrace ─► Outer topic
//	the aggregate table "agg" ─┬─► re-grouped by RegionOf ─► accounts and sum per region (store "region-totals") ─► RegionTotals topic
//	                           └─► ⋈ on foreign key RegionOf with the Regions table ─► AccountRegions topic
//
// validate fails the records marked Fail; copy inflates the records marked
// Big past the producers' limit. The copy branch comes first, so a record
// whose copy fails reaches neither output: every bad record's only trace
// is its dead letter. The branches after the aggregate are built only when
// t is Extended.
func Build(t Topics) (*topology.Topology, error) {
	b := topology.NewBuilder()
	src := topology.NewStream(b, t.In, serde.String(), serde.JSON[Txn]())
	valid := topology.Process(src, func() processor.Processor[string, Txn, string, Txn] {
		return processor.Func[string, Txn, string, Txn](func(ctx processor.Context[string, Txn], r processor.Record[string, Txn]) error {
			if r.Value.Fail {
				return fmt.Errorf("chaos: record %d rejected by the validating processor", r.Value.ID)
			}
			return ctx.Forward(r)
		})
	}, topology.Named("validate")).WithSerdes(serde.String(), serde.JSON[Txn]())
	topology.MapValues(valid, func(v Txn) Txn {
		if v.Big {
			v.Pad = strings.Repeat("x", padBytes)
		}
		return v
	}, topology.Named("copy")).WithValueSerde(serde.JSON[Txn]()).To(t.Copy)
	byKey := valid.Repartition(topology.Named(Repartition))
	grouped := byKey.GroupByKey()
	// Every aggregate folds the same way (Fold).
	initAgg, fold := func() Agg { return Agg{} }, func(_ string, v Txn, a Agg) Agg { return Fold(a, v) }
	aggs := topology.Aggregate(grouped, initAgg, fold, serde.JSON[Agg](), topology.Materialized(Store))
	aggs.ToStream().To(t.Agg)
	buildPostgres(t, byKey, aggs) // with WEIR_POSTGRES_DSN (pgsink.go)
	if t.Extended() {
		windowed := topology.AggregateWindowed(topology.WindowedBy(grouped, topology.TumblingWindows(Window).WithGrace(WindowGrace)),
			initAgg, fold, serde.JSON[Agg](), topology.Materialized(WindowStore))
		topology.Map(windowed.ToStream(), func(k topology.Windowed[string], a Agg) (string, Agg) { return k.String(), a }).
			WithSerdes(serde.String(), serde.JSON[Agg]()).To(t.Win)
		evens := byKey.Filter(func(_ string, v Txn) bool { return v.ID%2 == 0 }, topology.Named("evens"))
		odds := byKey.Filter(func(_ string, v Txn) bool { return v.ID%2 == 1 }, topology.Named("odds"))
		topology.JoinStreams(evens, odds, func(_ string, e, o Txn) string { return PairValue(e.ID, o.ID) },
			topology.JoinTimeDifference(JoinWithin).WithGrace(WindowGrace), topology.Named(Join)).
			WithSerdes(serde.String(), serde.String()).To(t.Pairs)
		sessions := topology.AggregateSessions(topology.SessionWindowedBy(grouped, topology.SessionWindowsWithGap(SessionGap).WithGrace(WindowGrace)),
			initAgg, fold, func(_ string, a, b Agg) Agg { return Merge(a, b) }, serde.JSON[Agg](), topology.Materialized(SessionStore))
		// SelectKey leaves the values alone: a merged session's delete stays
		// a tombstone.
		topology.SelectKey(sessions.ToStream(), func(k topology.Windowed[string], _ Agg) string { return k.String() }).
			WithSerdes(serde.String(), serde.JSON[Agg]()).To(t.Sessions)
		buildBranches(b, t, aggs, evens, odds)
	}
	return b.Build()
}

// baseTime stamps input record i at baseTime + i ms.
var baseTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
