package kafka

import "sync"

// claimMembership is the group membership a franz-go claim is held under:
// the membership of the assignment the claim started from (kgo's at the
// last onAssigned; kgo's live state may already hold the new member id
// of a join under way, with the old generation), and — once the member
// lost its claims (onLost) — the member id and generation it lost them in.
//
// kgo's GroupMetadata is the member's live state, and a member that lost
// its membership (its session timed out, a heartbeat answered
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION) joins again: under the same
// member id and a newer generation, or under a new member id once the
// coordinator removed it. Meanwhile the group gave its partitions to
// other members, which resumed them from the committed offsets. A
// transactional offset commit (KIP-447) of the lost claim's work made
// after the rejoin — an engine whose batch or epoch was still running, a
// commit that waited out the rejoin — must not carry the new membership:
// the broker would accept it, committing the lost claim's outputs again
// and moving the group's offsets back to the claim's stale position. With
// the membership the claim was held under, the broker fences it
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and the engine rewinds.
//
// Invariant: membership returns the live (id, generation) only while the
// claim has not been lost and kgo still holds the member id the claim
// started under; a claim's answer never moves to another membership.
type claimMembership struct {
	mu         sync.Mutex
	grantedTo  string // the member id kgo held when the claim started
	grantedGen int32  // and its generation then
	lost       bool
	lostID     string // the membership the claim was lost in (lost)
	lostGen    int32
}

// start records the membership the claim is granted under: its
// assignment's, never a join's under way, whose member id would make the
// claim answer the new membership once the join completes, though the
// new assignment may give its partition to another member.
func (m *claimMembership) start(memberID string, gen int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grantedTo, m.grantedGen = memberID, gen
}

// lose records that the member lost the claim in membership (id, gen),
// kgo's state when onLost runs (before it joins again). Only the first
// loss counts.
func (m *claimMembership) lose(id string, gen int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.lost {
		m.lost, m.lostID, m.lostGen = true, id, gen
	}
}

// membership returns the membership the claim is held under, given kgo's
// live one: the live one while it is still the claim's; the one it was
// lost in after a loss; the one it was granted under if kgo holds another
// member id without a loss having been seen (the coordinator removed that
// member id: it refuses the commit). Never a generation of -1, which a
// coordinator accepts without a check when the group is empty.
func (m *claimMembership) membership(id string, gen int32) (string, int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.lost:
		return m.lostID, m.lostGen
	case id != m.grantedTo:
		return m.grantedTo, m.grantedGen
	}
	return id, gen
}

// staleFor reports whether the claim was granted under another member id
// than id, kgo's now, and then marks it lost in the membership it was
// granted under: the member joined again under a new member id.
func (m *claimMembership) staleFor(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grantedTo == id {
		return false
	}
	if !m.lost {
		m.lost, m.lostID, m.lostGen = true, m.grantedTo, m.grantedGen
	}
	return true
}
