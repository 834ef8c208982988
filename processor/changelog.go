package processor

import (
	"bytes"
	"fmt"
	"time"

	"github.com/weirstream/weir/statestore"
)

// Changelog records: every write to a logged store becomes one record in the
// store's changelog topic, in the task's partition. Key-value stores log
// (key, value); window stores log (statestore.EncodeWindowKey(key, start),
// value); session stores log (statestore.EncodeSessionKey(key, start, end),
// value). A nil value is a delete. Restore replays such records into a store.

// newLogged wraps s so that each write is also emitted as a changelog record.
func newLogged(s statestore.Store, emit func(key, value []byte) error) (statestore.Store, error) {
	switch st := s.(type) {
	case statestore.KeyValueStore:
		return &loggedKV{KeyValueStore: st, emit: emit}, nil
	case statestore.WindowStore:
		return &loggedWindow{WindowStore: st, emit: emit}, nil
	case statestore.SessionStore:
		return &loggedSession{SessionStore: st, emit: emit}, nil
	}
	return nil, fmt.Errorf("processor: cannot log store %q of type %T", s.Name(), s)
}

type loggedKV struct {
	statestore.KeyValueStore
	emit func(key, value []byte) error
}

func (l *loggedKV) unwrap() statestore.Store { return l.KeyValueStore }

func (l *loggedKV) Put(key, value []byte) error {
	if err := l.KeyValueStore.Put(key, value); err != nil {
		return err
	}
	return l.emit(key, value)
}

func (l *loggedKV) Delete(key []byte) error {
	if err := l.KeyValueStore.Delete(key); err != nil {
		return err
	}
	return l.emit(key, nil)
}

type loggedWindow struct {
	statestore.WindowStore
	emit func(key, value []byte) error
}

func (l *loggedWindow) unwrap() statestore.Store { return l.WindowStore }

func (l *loggedWindow) Put(key []byte, start time.Time, value []byte) error {
	if err := l.WindowStore.Put(key, start, value); err != nil {
		return err
	}
	return l.emit(statestore.EncodeWindowKey(key, start), value)
}

// ExpireBefore is not logged: every instance expires by the same stream
// time, and a restored store expires on its first record.

type loggedSession struct {
	statestore.SessionStore
	emit func(key, value []byte) error
}

func (l *loggedSession) unwrap() statestore.Store { return l.SessionStore }

func (l *loggedSession) Put(key []byte, start, end time.Time, value []byte) error {
	if err := l.SessionStore.Put(key, start, end, value); err != nil {
		return err
	}
	return l.emit(statestore.EncodeSessionKey(key, start, end), value)
}

func (l *loggedSession) Remove(key []byte, start, end time.Time) error {
	if err := l.SessionStore.Remove(key, start, end); err != nil {
		return err
	}
	return l.emit(statestore.EncodeSessionKey(key, start, end), nil)
}

// Restore applies one changelog record to s, as the changelog writer encoded
// it. A malformed key is an error; the caller decides whether to stop.
func Restore(s statestore.Store, key, value []byte) error {
	switch st := s.(type) {
	case statestore.KeyValueStore:
		if value == nil {
			return st.Delete(key)
		}
		return st.Put(key, value)
	case statestore.WindowStore:
		k, start, err := statestore.DecodeWindowKey(key)
		if err != nil {
			return fmt.Errorf("processor: restore %q: %w", s.Name(), err)
		}
		return st.Put(k, start, value)
	case statestore.SessionStore:
		k, start, end, err := statestore.DecodeSessionKey(key)
		if err != nil {
			return fmt.Errorf("processor: restore %q: %w", s.Name(), err)
		}
		if value == nil {
			return st.Remove(k, start, end)
		}
		return st.Put(k, start, end, value)
	}
	return fmt.Errorf("processor: cannot restore store %q of type %T", s.Name(), s)
}

// pendingChangelog keeps the changes of one logged store between two
// FlushChangelog calls, one entry per changelog key, in the order keys
// were first changed (so a flush is deterministic).
type pendingChangelog struct {
	topic     string
	partition int32
	index     map[string]int
	recs      []pendingChange
	// putsFirst flushes the puts before the deletes (session stores: see
	// flushOrder).
	putsFirst bool
}

type pendingChange struct {
	key, value []byte
	ts         int64 // ms
}

func newPendingChangelog(topic string, partition int32, kind statestore.Kind) *pendingChangelog {
	return &pendingChangelog{topic: topic, partition: partition, index: map[string]int{}, putsFirst: kind == statestore.KindSession}
}

// flushOrder returns the records in the order a flush emits them: the
// order keys were first changed, but a session store's puts go before its
// deletes. A flush may land in part — at-least-once, a member crashed or
// stalled past its session timeout while sending it — and the next owner
// restores what landed, then processes the flush's inputs again from the
// committed offsets. A session merge is a put of the merged session and
// deletes of the sessions it merged, under other keys; deletes first, a
// part could hold them without the put, and the key's aggregate was lost
// (the replay folded into an empty session). Puts first, a part holds
// the merged session, perhaps beside sessions it contains, which the
// aggregation knows for leftovers of the merge (topology's sessionAgg).
func (p *pendingChangelog) flushOrder() []pendingChange {
	if !p.putsFirst {
		return p.recs
	}
	out := make([]pendingChange, 0, len(p.recs))
	for _, del := range []bool{false, true} {
		for _, c := range p.recs {
			if (c.value == nil) == del {
				out = append(out, c)
			}
		}
	}
	return out
}

// add records key's latest value (nil: deleted); key and value are copied,
// since callers may reuse their buffers.
func (p *pendingChangelog) add(key, value []byte, ts int64) {
	if value != nil {
		value = bytes.Clone(value)
	}
	if i, ok := p.index[string(key)]; ok {
		p.recs[i].value, p.recs[i].ts = value, ts
		return
	}
	p.index[string(key)] = len(p.recs)
	p.recs = append(p.recs, pendingChange{key: bytes.Clone(key), value: value, ts: ts})
}

func (p *pendingChangelog) reset() {
	clear(p.index)
	clear(p.recs)
	p.recs = p.recs[:0]
}

// FlushChangelog emits, with TaskConfig.CoalesceChangelog, one changelog
// record per key each logged store changed since the previous flush,
// carrying the key's latest value: the changelog then ends with the
// store's contents, as with a record per write. A session store's puts
// go before its deletes (see pendingChangelog.flushOrder). Engines call it before
// every commit. Without CoalesceChangelog there is nothing to flush. On an
// Emit error every record stays pending (sending one again is harmless: it
// carries the same latest value) and the error is returned;
// DiscardChangelog drops them when the epoch or batch is abandoned.
func (t *Task) FlushChangelog() error {
	for _, p := range t.pending {
		for _, c := range p.flushOrder() {
			err := t.cfg.Emit(Output{
				Topic: p.topic, Partition: p.partition, Key: c.key, Value: c.value,
				Timestamp: time.UnixMilli(c.ts), Kind: OutputChangelog,
			})
			if err != nil {
				return fmt.Errorf("processor: task %s: changelog %q: %w", t.cfg.ID, p.topic, err)
			}
		}
		p.reset()
	}
	return nil
}

// PendingChangelog is the number of changelog records FlushChangelog would
// emit now.
func (t *Task) PendingChangelog() int {
	n := 0
	for _, p := range t.pending {
		n += len(p.recs)
	}
	return n
}

// DiscardChangelog drops the changes FlushChangelog has not emitted yet,
// together with the staged store writes they describe (an aborted epoch or
// batch), and the updates the record caches hold (see FlushCache): they
// belong to the abandoned epoch too.
func (t *Task) DiscardChangelog() {
	t.discardCaches()
	for _, p := range t.pending {
		p.reset()
	}
}
