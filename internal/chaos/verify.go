package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkaverify"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// expectation is what the verifier recomputes from the generated input.
type expectation struct {
	inputs []Input // by id-1
	part   []int32 // input partition by id-1, set when produced
	off    []int64 // input offset by id-1
	// folds[key][c-1] is the fold of the key's first c good inputs, and
	// windows[WindowKey(key, id)][c-1] that of its first c in the window.
	folds, windows map[string][]Agg
	// pairs maps every PairValue the join must write once to its key.
	pairs map[string]string
	// sessions has every session the session aggregate passes through, by
	// SessionKey: an account's session of inputs i1..in is [i1,i1], then
	// [i1,i2] (deleting [i1,i1]), ... [i1,in], the last one kept.
	sessions map[string]sessionWant
	// branch is the extended workload's re-grouping, foreign-key join and
	// outer join (verify_branches.go).
	branch branchWant
	// endOfRun are the end-of-run records written after the inputs
	// (endofrun.go), none when the run writes none.
	endOfRun []Input
}

// sessionWant is one session's aggregate, and whether it is the account's
// final session of those inputs (not deleted by a later merge).
type sessionWant struct {
	agg   Agg
	final bool
}

// newExpectation recomputes the outputs of inputs followed by the
// end-of-run records endOfRun (nil when the run writes none).
func newExpectation(inputs, endOfRun []Input) (*expectation, error) {
	e := &expectation{inputs: inputs, endOfRun: endOfRun, part: make([]int32, len(inputs)), off: make([]int64, len(inputs)),
		folds: map[string][]Agg{}, windows: map[string][]Agg{}, pairs: map[string]string{}, sessions: map[string]sessionWant{}}
	byKey := map[string][]int64{} // good input ids by key, ascending
	for _, in := range inputs {
		if in.Kind != Good {
			continue
		}
		foldInto(e.folds, in.Key, in.Txn)
		foldInto(e.windows, WindowKey(in.Key, in.ID), in.Txn)
		byKey[in.Key] = append(byKey[in.Key], in.ID)
	}
	gap := SessionGap.Milliseconds()
	for key, ids := range byKey {
		var first int64
		var agg Agg
		for i, id := range ids {
			if i == 0 || id-ids[i-1] > gap {
				first, agg = id, Agg{}
			}
			agg = Fold(agg, inputs[id-1].Txn)
			final := i == len(ids)-1 || ids[i+1]-id > gap
			e.sessions[SessionKey(key, first, id)] = sessionWant{agg: agg, final: final}
		}
	}
	within := JoinWithin.Milliseconds()
	for key, ids := range byKey {
		for i, a := range ids {
			for _, b := range ids[i+1:] {
				if b-a > within {
					break
				}
				if a%2 == 0 && b%2 == 1 {
					e.pairs[PairValue(a, b)] = key
				} else if a%2 == 1 && b%2 == 0 {
					e.pairs[PairValue(b, a)] = key
				}
			}
		}
	}
	var err error
	e.branch, err = newBranchWant(e.folds, inputs, endOfRun)
	return e, err
}

// foldInto appends the fold of t onto folds[key].
func foldInto(folds map[string][]Agg, key string, t Txn) {
	f := folds[key]
	prev := Agg{}
	if len(f) > 0 {
		prev = f[len(f)-1]
	}
	folds[key] = append(f, Fold(prev, t))
}

// report is what one verification found. pending counts outputs whose
// last value is not the final one yet: converge waits for them, and the
// final verification counts them as mismatches.
type report struct {
	duplicates, lost, mismatches, dlq, pending int
	problems                                   []string
}

func (r *report) problem(format string, args ...any) {
	const maxProblems = 20
	if len(r.problems) < maxProblems {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	} else if len(r.problems) == maxProblems {
		r.problems = append(r.problems, "(more problems not listed)")
	}
}

// verifier reads a scenario's topics as an independent read_committed
// consumer (franz-go, not weir's sarama adapter) and checks them against
// the expectation.
type verifier struct {
	brokers []string
	topics  Topics
	app     string
	exp     *expectation
	// ordered: exactly-once, so each key's outputs must come exactly as
	// its 1st, 2nd, ... fold, by position.
	ordered bool
}

func (v *verifier) read(ctx context.Context, topic string) ([]kafka.Record, error) {
	parts, err := kafkaverify.ReadStable(ctx, v.brokers, topic)
	if err != nil {
		return nil, fmt.Errorf("chaos: read %s: %w", topic, err)
	}
	var out []kafka.Record
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		out = append(out, parts[p]...)
	}
	return out, nil
}

// outputs checks the copy, aggregate and dead-letter topics.
func (v *verifier) outputs(ctx context.Context) (report, error) {
	var r report
	if err := v.checkCopies(ctx, &r); err != nil {
		return r, err
	}
	if err := v.checkAggregates(ctx, &r, v.topics.Agg, v.exp.folds); err != nil {
		return r, err
	}
	if v.topics.Extended() {
		if err := v.checkAggregates(ctx, &r, v.topics.Win, v.exp.windows); err != nil {
			return r, err
		}
		if err := v.checkPairs(ctx, &r); err != nil {
			return r, err
		}
		if err := v.checkSessions(ctx, &r); err != nil {
			return r, err
		}
		for _, c := range []struct {
			topic string
			check func([]kafka.Record, *report)
		}{
			{v.topics.RegionTotals, v.checkRegionTotals},
			{v.topics.AccountRegions, v.checkAccountRegions},
			{v.topics.Outer, v.checkOuter},
		} {
			recs, err := v.read(ctx, c.topic)
			if err != nil {
				return r, err
			}
			c.check(recs, &r)
		}
	}
	if err := v.checkPostgres(ctx, &r); err != nil { // with WEIR_POSTGRES_DSN (verify_postgres.go)
		return r, err
	}
	return r, v.checkDeadLetters(ctx, &r)
}

func (v *verifier) input(id int64) (Input, bool) {
	if id < 1 || id > int64(len(v.exp.inputs)) {
		return Input{}, false
	}
	return v.exp.inputs[id-1], true
}

// checkCopies: every good input once in the copy topic, nothing else.
func (v *verifier) checkCopies(ctx context.Context, r *report) error {
	recs, err := v.read(ctx, v.topics.Copy)
	if err != nil {
		return err
	}
	seen := make([]int32, len(v.exp.inputs))
	for _, rec := range recs {
		if isEndOfRun(string(rec.Key)) {
			continue
		}
		t, err := serde.JSON[Txn]().Deserialize("", rec.Value)
		in, ok := v.input(t.ID)
		switch {
		case err != nil || !ok:
			r.mismatches++
			r.problem("copy %d@%d: not a copy of an input (%q)", rec.Partition, rec.Offset, trim(rec.Value))
			continue
		case in.Kind != Good:
			r.mismatches++
			r.problem("copy of bad input %d (kind %d) at %d@%d", t.ID, in.Kind, rec.Partition, rec.Offset)
		case t != in.Txn || string(rec.Key) != in.Key:
			r.mismatches++
			r.problem("copy of input %d differs: %+v", t.ID, t)
		}
		seen[t.ID-1]++
		if seen[t.ID-1] > 1 {
			r.duplicates++
		}
	}
	for i, in := range v.exp.inputs {
		if in.Kind == Good && seen[i] == 0 {
			r.lost++
			r.problem("input %d (%s k=%d) has no copy", in.ID, in.Key, in.K)
		}
	}
	return nil
}

// checkAggregates checks an aggregate topic (the Agg or the Win topic)
// against want, its folds by output key: for every key, the outputs are
// the folds of its first 1, 2, ..., n good inputs, each once (under
// exactly-once, in that order).
func (v *verifier) checkAggregates(ctx context.Context, r *report, topic string, want map[string][]Agg) error {
	recs, err := v.read(ctx, topic)
	if err != nil {
		return err
	}
	seen := map[string][]int32{}
	for key, f := range want {
		seen[key] = make([]int32, len(f))
	}
	position := map[string]int64{}
	for _, rec := range recs {
		key := string(rec.Key)
		if isEndOfRun(key) {
			continue
		}
		a, err := serde.JSON[Agg]().Deserialize("", rec.Value)
		folds := want[key]
		if err != nil || a.Count < 1 || a.Count > int64(len(folds)) {
			r.mismatches++
			r.problem("aggregate %s at %s %d@%d: count %d of %d good inputs (%q)", key, topic, rec.Partition, rec.Offset, a.Count, len(folds), trim(rec.Value))
			continue
		}
		position[key]++
		if want := folds[a.Count-1]; !sameFold(a, want) {
			r.mismatches++
			r.problem("aggregate %s #%d: got %+v, the fold of its first %d inputs is %+v", key, a.Count, a, a.Count, want)
		}
		if v.ordered && a.Count != position[key] {
			r.mismatches++
			r.problem("aggregate %s: output %d is the fold of %d inputs", key, position[key], a.Count)
		}
		seen[key][a.Count-1]++
		if seen[key][a.Count-1] > 1 {
			r.duplicates++
		}
	}
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		for c, n := range seen[key] {
			if n == 0 {
				r.lost++
				r.problem("aggregate %s #%d never written", key, c+1)
			}
		}
	}
	return nil
}

// checkPairs: every pair of an account's even-id and odd-id good inputs
// within JoinWithin joined once, and nothing else.
func (v *verifier) checkPairs(ctx context.Context, r *report) error {
	recs, err := v.read(ctx, v.topics.Pairs)
	if err != nil {
		return err
	}
	seen := make(map[string]int, len(v.exp.pairs))
	for _, rec := range recs {
		if isEndOfRun(string(rec.Key)) {
			continue
		}
		pair := string(rec.Value)
		key, ok := v.exp.pairs[pair]
		if !ok || key != string(rec.Key) {
			r.mismatches++
			r.problem("join output %s → %q at %d@%d is no pair of good inputs within %v", rec.Key, trim(rec.Value), rec.Partition, rec.Offset, JoinWithin)
			continue
		}
		seen[pair]++
		if seen[pair] > 1 {
			r.duplicates++
		}
	}
	for _, pair := range slices.Sorted(maps.Keys(v.exp.pairs)) {
		if seen[pair] == 0 {
			r.lost++
			r.problem("join pair %s (%s) never written", pair, v.exp.pairs[pair])
		}
	}
	return nil
}

// checkSessions: every session the aggregate passes through written once
// with the fold of its inputs, deleted once (a tombstone) when the next
// input extends it, and each account's final sessions not deleted.
func (v *verifier) checkSessions(ctx context.Context, r *report) error {
	recs, err := v.read(ctx, v.topics.Sessions)
	if err != nil {
		return err
	}
	values, deletes := map[string]int{}, map[string]int{}
	last := map[string]bool{} // by key: whether its last record is a value
	for _, rec := range recs {
		key := string(rec.Key)
		if isEndOfRun(key) {
			continue
		}
		want, ok := v.exp.sessions[key]
		if !ok {
			r.mismatches++
			r.problem("session output %s at %d@%d is no session of good inputs (%q)", key, rec.Partition, rec.Offset, trim(rec.Value))
			continue
		}
		last[key] = rec.Value != nil
		n := values
		if rec.Value == nil {
			n = deletes
		} else if a, err := serde.JSON[Agg]().Deserialize("", rec.Value); err != nil || !sameFold(a, want.agg) {
			r.mismatches++
			r.problem("session %s: got %q, the fold of its inputs is %+v", key, trim(rec.Value), want.agg)
		}
		n[key]++
		if n[key] > 1 {
			r.duplicates++
		}
	}
	for _, key := range slices.Sorted(maps.Keys(v.exp.sessions)) {
		want := v.exp.sessions[key]
		switch {
		case values[key] == 0:
			r.lost++
			r.problem("session %s never written", key)
		case want.final && !last[key]:
			r.lost++
			r.problem("session %s, an account's last of its inputs, deleted", key)
		case !want.final && deletes[key] == 0:
			r.mismatches++
			r.problem("session %s, extended by a later input, never deleted", key)
		}
	}
	return nil
}

// checkDeadLetters: every bad input once in "<in>-dlq", with the headers
// naming its error and position; no good input there; nothing in the
// repartition topic's dead-letter topic.
func (v *verifier) checkDeadLetters(ctx context.Context, r *report) error {
	recs, err := v.read(ctx, tasks.DeadLetterTopic(v.topics.In))
	if err != nil {
		return err
	}
	seen := make([]int32, len(v.exp.inputs))
	for _, rec := range recs {
		if isEndOfRun(string(rec.Key)) {
			continue
		}
		id, err := IDOf(rec.Value)
		in, ok := v.input(id)
		if err != nil || !ok || in.Kind == Good {
			r.mismatches++
			r.problem("dead letter at %d@%d is not a bad input (%q)", rec.Partition, rec.Offset, trim(rec.Value))
			continue
		}
		h := map[string]string{}
		for _, x := range rec.Headers {
			h[x.Key] = string(x.Value)
		}
		kind, node := "processing", "validate"
		switch in.Kind {
		case Undeserializable:
			kind, node = "deserialization", ""
		case Oversized:
			node = "copy"
		}
		if h[tasks.HeaderErrorKind] != kind || h[tasks.HeaderErrorNode] != node || h[tasks.HeaderErrorMessage] == "" ||
			h[tasks.HeaderSourceTopic] != v.topics.In ||
			h[tasks.HeaderSourcePartiton] != strconv.Itoa(int(v.exp.part[id-1])) ||
			h[tasks.HeaderSourceOffset] != strconv.FormatInt(v.exp.off[id-1], 10) ||
			string(rec.Key) != in.Key {
			r.mismatches++
			r.problem("dead letter of input %d (kind %d at %d@%d): headers %v", id, in.Kind, v.exp.part[id-1], v.exp.off[id-1], h)
		}
		seen[id-1]++
		if seen[id-1] > 1 {
			r.duplicates++
		} else {
			r.dlq++
		}
	}
	for i, in := range v.exp.inputs {
		if in.Kind != Good && seen[i] == 0 {
			r.lost++
			r.problem("bad input %d (kind %d) has no dead letter", in.ID, in.Kind)
		}
	}
	internal, err := kafkaverify.ReadStable(ctx, v.brokers, tasks.DeadLetterTopic(v.app+"-"+Repartition+"-repartition"))
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("chaos: read the repartition dead-letter topic: %w", err)
	}
	for _, recs := range internal {
		for _, rec := range recs {
			r.mismatches++
			r.problem("dead letter of a repartitioned record: %q", trim(rec.Value))
		}
	}
	return nil
}

// finished checks that no transaction is left open (last stable offset =
// end offset) on every topic of the scenario — every topic weir writes,
// outputs, dead letters, repartition and changelog topics, whatever their
// operators name them — and that the group's committed offsets are the
// input's end offsets.
func (v *verifier) finished(ctx context.Context, r *report) error {
	topics, err := topicsWithPrefix(ctx, v.brokers, v.app+"-")
	if err != nil {
		return err
	}
	for _, want := range v.topics.outputs(v.app+"-"+Store+"-changelog", v.app+"-"+Repartition+"-repartition") {
		if !slices.Contains(topics, want) {
			r.problem("topic %s missing", want)
		}
	}
	for _, topic := range topics {
		hwm, err := kafkaverify.EndOffsets(ctx, v.brokers, topic, false)
		if err != nil {
			return fmt.Errorf("chaos: end offsets of %s: %w", topic, err)
		}
		lso, err := kafkaverify.EndOffsets(ctx, v.brokers, topic, true)
		if err != nil {
			return fmt.Errorf("chaos: stable offsets of %s: %w", topic, err)
		}
		if !maps.Equal(hwm, lso) {
			r.problem("open transactions on %s: last stable offsets %v, end offsets %v", topic, lso, hwm)
		}
	}
	end, committed, err := v.inputProgress(ctx)
	if err != nil {
		return err
	}
	if !maps.Equal(end, committed) {
		r.problem("group %s committed %v on %s, end offsets %v", v.app, committed, v.topics.In, end)
	}
	return nil
}

// topicsWithPrefix lists the topics whose name begins with prefix.
func topicsWithPrefix(ctx context.Context, brokers []string, prefix string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-chaos-verifier"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	meta, err := metadata(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("chaos: list topics: %w", err)
	}
	var out []string
	for _, t := range meta.Topics {
		if t.Topic != nil && strings.HasPrefix(*t.Topic, prefix) {
			out = append(out, *t.Topic)
		}
	}
	slices.Sort(out)
	return out, nil
}

// inputProgress returns the input's end offsets and the group's committed
// offsets on it.
func (v *verifier) inputProgress(ctx context.Context) (end, committed map[int32]int64, err error) {
	end, err = kafkaverify.EndOffsets(ctx, v.brokers, v.topics.In, false)
	if err != nil {
		return nil, nil, fmt.Errorf("chaos: end offsets of %s: %w", v.topics.In, err)
	}
	committed, err = groupOffsets(ctx, v.brokers, v.app, v.topics.In)
	return end, committed, err
}

// groupOffsets fetches a group's committed offsets on topic (stable).
func groupOffsets(ctx context.Context, brokers []string, group, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-chaos-verifier"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.RequireStable = true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range int32(Partitions) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic = topic
	gt.Partitions = rt.Partitions
	rg.Topics = append(rg.Topics, gt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("chaos: offset fetch: %w", err)
	}
	out := map[int32]int64{}
	add := func(code int16, p int32, off int64) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("chaos: offset fetch %s/%d: %w", topic, p, err)
		}
		if off >= 0 {
			out[p] = off
		}
		return nil
	}
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, fmt.Errorf("chaos: offset fetch: %w", err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := add(p.ErrorCode, p.Partition, p.Offset); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("chaos: offset fetch: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := add(p.ErrorCode, p.Partition, p.Offset); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// stores checks the final stores: for each store partition, the state dir
// holding its newest checkpoint (its last owner — possibly a killed
// instance's abandoned dir, when the partition had not moved again), with
// the committed changelog records from that checkpoint on replayed over
// it — exactly what an owner restoring from that dir would hold — has
// exactly the recomputed aggregate of every key of the partition.
//
// The replay matters: under exactly-once a checkpoint is the changelog's
// last stable offset after the commit, which an open transaction of
// another producer can hold back, so a dir may be ahead of its checkpoint
// (harmless: a restore replays the latest values again) and two dirs may
// share a checkpoint with different contents. A dir behind its checkpoint
// — state a restore would never repair — still fails.
//
// The replay follows weir's documented restore rule for writer
// generations (tasks.HeaderWriter): a record whose generation is below
// the newest seen since the checkpoint (starting from the checkpoint's) is
// a replaced owner's late write and is skipped; a new owner's marker
// record raises the newest generation and is no store write (its key is no
// account's). Under at-least-once a member stalled past its session
// timeout writes such late records.
func (v *verifier) stores(ctx context.Context, dirs []string, r *report) error {
	tail, err := kafkaverify.ReadStable(ctx, v.brokers, v.app+"-"+Store+"-changelog")
	if err != nil {
		return fmt.Errorf("chaos: read the changelog: %w", err)
	}
	var dbs []*badgerstore.DB
	defer func() {
		for _, db := range dbs {
			_ = db.Close()
		}
	}()
	for _, dir := range dirs {
		db, err := badgerstore.Open(filepath.Join(dir, "stores"), badgerstore.Options{ReadOnly: true})
		if err != nil {
			// A killed instance's database was not closed: Badger
			// replays its log when opened for writing.
			db, err = badgerstore.Open(filepath.Join(dir, "stores"), badgerstore.Options{})
		}
		if err != nil {
			return fmt.Errorf("chaos: open the stores of %s: %w", dir, err)
		}
		dbs = append(dbs, db)
	}
	owner := make([]*badgerstore.DB, Partitions)
	best := make([]badgerstore.Position, Partitions)
	for p := range int32(Partitions) {
		best[p].Offset = -1
		for _, db := range dbs {
			pos, ok, err := db.Checkpoint(Store, p)
			if err != nil {
				return fmt.Errorf("chaos: checkpoint: %w", err)
			}
			if ok && pos.Offset > best[p].Offset {
				owner[p], best[p] = db, pos
			}
		}
	}
	latest := make([]map[string][]byte, Partitions) // the replayed tail, by key
	for p := range int32(Partitions) {
		latest[p] = map[string][]byte{}
		newest := best[p].Writer
		for _, rec := range tail[p] {
			if rec.Offset < best[p].Offset {
				continue
			}
			if g, ok := tasks.WriterOf(rec.Headers); ok {
				if g < newest {
					continue
				}
				newest = g
			}
			latest[p][string(rec.Key)] = rec.Value
		}
	}
	for k := range Keys {
		key := KeyName(k)
		p, err := kafka.PartitionForKey([]byte(key), Partitions)
		if err != nil {
			return err
		}
		folds := v.exp.folds[key]
		if owner[p] == nil {
			if len(folds) > 0 {
				r.mismatches++
				r.problem("store partition %d: no state dir has a checkpoint", p)
			}
			continue
		}
		b, ok, err := owner[p].Get(Store, p, []byte(key))
		if err != nil {
			return fmt.Errorf("chaos: store get: %w", err)
		}
		if v, replayed := latest[p][key]; replayed {
			b, ok = v, v != nil
		}
		switch {
		case !ok && len(folds) == 0:
		case !ok:
			r.mismatches++
			r.problem("store: %s missing in partition %d", key, p)
		default:
			a, err := serde.JSON[Agg]().Deserialize("", b)
			if err != nil || len(folds) == 0 || !sameFold(a, folds[len(folds)-1]) {
				var want Agg
				if len(folds) > 0 {
					want = folds[len(folds)-1]
				}
				r.mismatches++
				r.problem("store: %s is %q, the recomputation %+v", key, trim(b), want)
			}
		}
	}
	return nil
}

func trim(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
