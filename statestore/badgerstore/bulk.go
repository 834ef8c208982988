package badgerstore

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4/pb"

	"github.com/weirstream/weir/statestore"
)

// badgerBitDelete is Badger's entry meta bit of a deletion (bitDelete in
// badger/v4's value.go, part of its on-disk format): ApplyFresh's
// deletions carry it, as a Txn.Delete's do.
const badgerBitDelete = 1 << 0

// bulkPending bounds how many write requests of one ApplyFresh Badger
// holds at a time.
const bulkPending = 4

// ApplyFresh is Apply for a restore that fills one store partition from
// empty: changes, all to sp and of one kind, then the checkpoint to. It
// writes the same rows Apply would, and takes the same arguments as
// invalid, for about half the CPU: the changes are sorted and the later
// change of a key kept (so Badger's memtable takes its inserts in key
// order), and they go to Badger's write path as one version's entries
// (Badger's KVLoader), without a transaction per batch — no map of pending
// writes, no commit timestamp, no read of the conflict state.
//
// It is safe only while nothing but this restore writes the partition,
// and every row the partition holds was written by an ApplyFresh of the
// same restore, the first of which found the partition empty (after
// DropPartition): the rows are written at the newest version the database
// holds (the read timestamp of a new transaction), which every read transaction from then on
// sees and every later commit exceeds; each call's version is above the
// previous call's, since the checkpoint that call committed last is newer
// than its rows; and within a call each key is written once. So no two
// writes of a key share a version, and the newest write wins, as with
// Apply. A row already there from another writer could share the version
// and lose to an older value: a restore from a checkpoint, a standby's
// catch-up and a committing task use Apply.
//
// The checkpoint is written, in a transaction of its own, after the rows
// are in Badger's write-ahead log, so it is never ahead of them; after a
// crash in between, a restore from the older checkpoint (or from empty)
// writes the same rows again.
func (db *DB) ApplyFresh(changes []Change, sp StorePartition, to Position) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()
	if db.readOnly {
		return ErrReadOnly
	}
	if err := validateName(sp.Store); err != nil {
		return fmt.Errorf("badgerstore: apply fresh: %w", err)
	}
	if to.Offset < 0 || to.Writer < 0 {
		return fmt.Errorf("badgerstore: apply fresh: %w: negative checkpoint %+v for store %q partition %d", ErrInvalid, to, sp.Store, sp.Partition)
	}
	ops, err := freshOps(changes, sp)
	if err != nil {
		return fmt.Errorf("badgerstore: apply fresh: %w", err)
	}
	if len(changes) > 0 {
		mark, err := db.kindMark(sp, changes[0].Kind)
		if err == nil && mark != nil {
			err = db.commit(mark)
		}
		if err != nil {
			return fmt.Errorf("badgerstore: apply fresh: %w", err)
		}
	}
	if err := db.settle(ops, db.load(ops)); err != nil {
		return fmt.Errorf("badgerstore: apply fresh %d changes: %w", len(changes), err)
	}
	if err := db.commit([]op{{key: metaKey(metaCheckpoint, sp.Store, sp.Partition), value: encodePosition(to)}}); err != nil {
		return fmt.Errorf("badgerstore: apply fresh: checkpoint: %w", err)
	}
	return nil
}

// load writes ops, each key once, at the database's newest version, and
// returns when Badger has written them (see ApplyFresh).
func (db *DB) load(ops []op) error {
	if len(ops) == 0 {
		return nil
	}
	// The read timestamp of a new transaction: the newest committed
	// version, every commit up to it done (Badger's oracle waits for
	// them). DB.MaxVersion would say the same, but reads the memtable's
	// newest version unlocked while Badger's writer updates it (a data
	// race in Badger).
	rt := db.bdb.NewTransaction(false)
	version := rt.ReadTs()
	rt.Discard()
	l := db.bdb.NewKVLoader(bulkPending)
	// KVLoader.Set copies what it keeps of kv (the key, with the version
	// appended, into a new slice; the value slice itself), so one pb.KV
	// serves every op.
	var kv pb.KV
	deleteMeta := []byte{badgerBitDelete}
	for _, o := range ops {
		kv = pb.KV{Key: o.key, Value: o.value, Version: version}
		if o.del {
			kv.Value, kv.Meta = nil, deleteMeta
		}
		if err := l.Set(&kv); err != nil {
			_ = l.Finish()
			return err
		}
	}
	return l.Finish()
}

// freshOps validates changes as changeOps does, all of them to sp and of
// one kind, and returns their row writes sorted by key, each key once
// (its last write). The row keys of a key-value batch share one
// allocation: the ops live only for the ApplyFresh that made them (Badger
// copies the keys it keeps, the row cache the values).
func freshOps(changes []Change, sp StorePartition) ([]op, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	kind := changes[0].Kind
	prefix := partitionPrefix(sp.Store, sp.Partition)
	var arena []byte
	if kind == statestore.KindKeyValue {
		n := 0
		for _, c := range changes {
			n += len(prefix) + 1 + len(c.Key)
		}
		arena = make([]byte, 0, n)
	}
	ops := make([]op, 0, len(changes))
	for i, c := range changes {
		if c.Store != sp.Store || c.Partition != sp.Partition {
			return nil, fmt.Errorf("change %d: %w: to store %q partition %d, not %q partition %d",
				i, ErrInvalid, c.Store, c.Partition, sp.Store, sp.Partition)
		}
		if c.Kind != kind {
			return nil, fmt.Errorf("change %d: %w: %s change to store %q partition %d after %s changes",
				i, ErrInvalid, c.Kind, c.Store, c.Partition, kind)
		}
		del := c.Value == nil
		if kind == statestore.KindKeyValue {
			start := len(arena)
			arena = append(append(append(arena, prefix...), tagData), c.Key...)
			ops = append(ops, op{key: arena[start:len(arena):len(arena)], value: c.Value, del: del})
			continue
		}
		data, index, err := rows(kind, prefix, c.Key)
		if err != nil {
			return nil, fmt.Errorf("change %d to store %q partition %d: %w: %w", i, c.Store, c.Partition, ErrInvalid, err)
		}
		if kind == statestore.KindSession && !del {
			if _, start, end, _ := statestore.DecodeSessionKey(c.Key); end.Before(start) {
				return nil, fmt.Errorf("change %d to store %q partition %d: %w", i, c.Store, c.Partition, statestore.ErrInvalidSession)
			}
		}
		ops = append(ops, op{key: data, value: c.Value, del: del}, op{key: index, value: []byte{}, del: del})
	}
	return lastByKey(ops), nil
}

// lastByKey sorts ops by key and keeps, of the ops of one key, the last.
// A changelog is often in key order already (keys written in order, a
// compacted log), so a batch whose keys strictly increase is returned as
// it is after one pass.
func lastByKey(ops []op) []op {
	sorted := true
	for i := 1; i < len(ops); i++ {
		if bytes.Compare(ops[i-1].key, ops[i].key) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return ops
	}
	// Sort positions by (key, position): equal keys stay in their order
	// without a stable sort's moves of whole ops, and the last of each
	// run of equal keys is the one that stays.
	pos := make([]int32, len(ops))
	for i := range pos {
		pos[i] = int32(i)
	}
	slices.SortFunc(pos, func(a, b int32) int {
		if c := bytes.Compare(ops[a].key, ops[b].key); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]op, 0, len(ops))
	for i, p := range pos {
		if i+1 < len(pos) && bytes.Equal(ops[p].key, ops[pos[i+1]].key) {
			continue
		}
		out = append(out, ops[p])
	}
	return out
}
