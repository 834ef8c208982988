package kafka

import (
	"slices"
)

// Departures lets the members of a group learn the transactional ids of
// the members that left it, so that a survivor can fence them
// (txn.Fence) instead of waiting for their open transactions' timeout.
//
// Each member advertises its transactional id in its subscription; the
// leader writes the ids of every member of the generation into each
// assignment (userdata.go), so every member learns, at each assignment it
// receives, the ids of that generation's members — the leader too, after
// a leader died. A member compares them with those of its previous
// assignment ([Departed]).
type Departures struct {
	// TransactionalID is this member's transactional id ("": none, as
	// under at-least-once; the member advertises nothing).
	TransactionalID string
	// OnMembers, if set, receives the transactional ids of the members of
	// each generation this member receives an assignment of, sorted and
	// without duplicates (nil: none advertised). It runs in the group's
	// rebalance and must not block.
	OnMembers func(txnIDs []string)
}

// members hands the ids of a new assignment to OnMembers.
func (d Departures) members(txnIDs []string) {
	if d.OnMembers != nil {
		d.OnMembers(txnIDs)
	}
}

// txnIDsOf returns ids sorted, without duplicates and empty ids (members
// without a transactional id); nil if none is left, or if writing them
// into each of the generation's members' assignments would add more than
// maxPeersBytes (then no member fences: the broker's transaction timeout
// ends a dead member's transaction, as without this).
func txnIDsOf(ids []string, members int) []string {
	var out []string
	size := 0
	for _, id := range ids {
		if id != "" {
			out = append(out, id)
			size += len(id) + 1
		}
	}
	if size*members > maxPeersBytes {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Departed returns the transactional ids that self must fence after an
// assignment: those of prev (the ids of the generation of self's previous
// assignment) missing from cur (the new generation's), if self is the
// survivor with the lowest id — a member of both generations, so that
// every survivor that saw both assignments picks the same one. Both lists
// are sorted (Departures.OnMembers). A member that saw no previous
// generation (prev nil: it just joined) fences nothing.
//
// A survivor that missed a generation may pick differently and fence an
// id once more; fencing is idempotent. An id of a member that left and
// came back between the two generations is in cur and is not fenced: its
// own start fenced its previous producer.
func Departed(prev, cur []string, self string) []string {
	if self == "" || !slices.Contains(prev, self) || !slices.Contains(cur, self) {
		return nil
	}
	var gone []string
	for _, id := range prev {
		if _, stayed := slices.BinarySearch(cur, id); stayed {
			if id < self {
				return nil // a survivor with a lower id fences
			}
			continue
		}
		gone = append(gone, id)
	}
	return gone
}
