package kafka

import (
	"encoding/binary"
	"maps"
	"slices"
)

// The user data weir's members exchange through the group, client-neutral:
// any client's group (sarama's, franz-go's) carries these bytes.
//
// Subscription, version 2: version byte, the generation of the member's
// last assignment (big-endian int32), its member data (uvarint length and
// bytes), then the lags of the tasks whose state it holds (uvarint count,
// then per task, sorted: uvarint topic length, topic, uvarint partition,
// uvarint lag) — Kafka Streams' SubscriptionInfo task offset sums, as lags
// — and, when the member runs stateful tasks, their sizes (uvarint count,
// then per task, sorted: the task as above and the uvarint sum of its
// stores' changelog offsets). Decoders that stop after the lags ignore
// the sizes. A member under exactly-once then appends its transactional
// id (uvarint length and bytes; the sizes' count, 0 for none, is written
// before it). Version 1 (generation and member data to the end, no lags)
// still decodes.
//
// Assignment, version 2: version byte, the peers (uvarint length, then
// encodePeers' bytes, empty for none), then the member's standby
// tasks and its warm-up tasks (each a uvarint count, then per task its
// topic and partition as above) — Kafka Streams' AssignmentInfo standby
// tasks, warm-ups among them — and, when any member of the generation has
// a transactional id, those ids (uvarint count, then each as uvarint
// length and bytes, sorted; departed.go). Version 1 (peers to the end)
// still decodes.

// subscriptionVersion2 prefixes subscription user data with lags.
const subscriptionVersion2 = 2

// subscription is what a member says of itself when it joins.
type subscription struct {
	generation int32
	memberData []byte
	// lags by task: records the member's copy of the task's stores is
	// behind their changelogs (0 for the tasks it runs).
	lags map[TaskID]int64
	// sizes by task, of the tasks the member runs: the changelog records
	// a member holding none of the task's state would restore (the sum of
	// its stores' changelog offsets; Kafka Streams' end offset sums).
	sizes map[TaskID]int64
	// txnID is the member's transactional id under exactly-once ("":
	// none).
	txnID string
}

// encodeSubscription encodes s as version 2.
func encodeSubscription(s subscription) []byte {
	b := make([]byte, 5, 16+len(s.memberData))
	b[0] = subscriptionVersion2
	binary.BigEndian.PutUint32(b[1:], uint32(s.generation))
	b = binary.AppendUvarint(b, uint64(len(s.memberData)))
	b = append(b, s.memberData...)
	b = appendTaskCounts(b, s.lags)
	if len(s.sizes) > 0 || s.txnID != "" {
		b = appendTaskCounts(b, s.sizes)
	}
	if s.txnID != "" {
		b = binary.AppendUvarint(b, uint64(len(s.txnID)))
		b = append(b, s.txnID...)
	}
	return b
}

// appendTaskCounts appends a count of tasks, then each task (sorted) with
// its number.
func appendTaskCounts(b []byte, counts map[TaskID]int64) []byte {
	ids := slices.SortedFunc(maps.Keys(counts), TaskID.compare)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendTask(b, id)
		b = binary.AppendUvarint(b, uint64(max(counts[id], 0)))
	}
	return b
}

// taskCounts reads what appendTaskCounts wrote (nil for a count of 0).
func (r *reader) taskCounts() map[TaskID]int64 {
	var out map[TaskID]int64
	n := r.uvarint()
	for i := uint64(0); i < n && r.ok; i++ {
		id := r.task()
		v := r.uvarint()
		if r.ok {
			if out == nil {
				out = map[TaskID]int64{}
			}
			out[id] = int64(min(v, 1<<62))
		}
	}
	return out
}

// decodeSubscription decodes version 1 or 2; generation -1 and nothing
// else for data it does not know (another assignor's, a newer weir's,
// truncated).
func decodeSubscription(b []byte) subscription {
	unknown := subscription{generation: -1}
	if len(b) < 5 {
		return unknown
	}
	s := subscription{generation: int32(binary.BigEndian.Uint32(b[1:5]))}
	switch b[0] {
	case userDataVersion:
		if len(b) > 5 {
			s.memberData = b[5:]
		}
		return s
	case subscriptionVersion2:
	default:
		return unknown
	}
	r := reader{b: b[5:], ok: true}
	if md := r.bytes(); len(md) > 0 {
		s.memberData = md
	}
	s.lags = r.taskCounts()
	if r.ok && len(r.b) > 0 {
		s.sizes = r.taskCounts()
	}
	if r.ok && len(r.b) > 0 {
		s.txnID = string(r.bytes())
	}
	if !r.ok {
		return unknown
	}
	return s
}

// assignmentVersion2 prefixes assignment user data with replicas.
const assignmentVersion2 = 2

// memberAssignment is what the leader tells one member besides its
// partitions.
type memberAssignment struct {
	// peers is every member's data (encodePeers), nil when too large.
	peers map[string][]byte
	// standby and warmup are the tasks whose stores the member keeps
	// caught up without running them.
	standby []TaskID
	warmup  []TaskID
	// txnIDs are the transactional ids of the generation's members,
	// sorted (departed.go).
	txnIDs []string
}

// encodeAssignment encodes a member's assignment data as version 2;
// peers are the bytes of encodePeers (nil: none), txnIDs the
// generation's transactional ids (txnIDsOf). With nothing to carry
// it returns nil.
func encodeAssignment(peers []byte, standby, warmup []TaskID, txnIDs ...string) []byte {
	if len(peers) == 0 && len(standby) == 0 && len(warmup) == 0 && len(txnIDs) == 0 {
		return nil
	}
	b := []byte{assignmentVersion2}
	b = binary.AppendUvarint(b, uint64(len(peers)))
	b = append(b, peers...)
	for _, ids := range [][]TaskID{standby, warmup} {
		b = binary.AppendUvarint(b, uint64(len(ids)))
		for _, id := range ids {
			b = appendTask(b, id)
		}
	}
	if len(txnIDs) > 0 {
		b = binary.AppendUvarint(b, uint64(len(txnIDs)))
		for _, id := range txnIDs {
			b = binary.AppendUvarint(b, uint64(len(id)))
			b = append(b, id...)
		}
	}
	return b
}

// decodeAssignment decodes version 1 or 2; the zero value for data it
// does not know.
func decodeAssignment(b []byte) memberAssignment {
	if len(b) == 0 {
		return memberAssignment{}
	}
	switch b[0] {
	case peersVersion:
		return memberAssignment{peers: decodePeers(b)}
	case assignmentVersion2:
	default:
		return memberAssignment{}
	}
	r := reader{b: b[1:], ok: true}
	var a memberAssignment
	if peers := r.bytes(); len(peers) > 0 {
		a.peers = decodePeers(peers)
	}
	for _, dst := range []*[]TaskID{&a.standby, &a.warmup} {
		n := r.uvarint()
		for i := uint64(0); i < n && r.ok; i++ {
			if id := r.task(); r.ok {
				*dst = append(*dst, id)
			}
		}
	}
	if r.ok && len(r.b) > 0 {
		n := r.uvarint()
		for i := uint64(0); i < n && r.ok; i++ {
			if id := r.bytes(); r.ok {
				a.txnIDs = append(a.txnIDs, string(id))
			}
		}
	}
	if !r.ok {
		return memberAssignment{}
	}
	return a
}

func appendTask(b []byte, id TaskID) []byte {
	b = binary.AppendUvarint(b, uint64(len(id.Topic)))
	b = append(b, id.Topic...)
	return binary.AppendUvarint(b, uint64(uint32(id.Partition)))
}

// reader reads uvarints and length-prefixed bytes; ok turns false at the
// first malformed or truncated field and stays so.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) uvarint() uint64 {
	if !r.ok {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if !r.ok || n > uint64(len(r.b)) {
		r.ok = false
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) task() TaskID {
	topic := r.bytes()
	p := r.uvarint()
	if !r.ok || p > 1<<31-1 {
		r.ok = false
		return TaskID{}
	}
	return TaskID{Topic: string(topic), Partition: int32(p)}
}
