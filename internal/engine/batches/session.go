package batches

import "github.com/weirstream/weir/internal/kafka"

// commitSession returns the session a commit of several sources'
// positions carries (TxnOffsetCommit's group metadata): the one in the
// oldest generation, the last of them on a tie; nil if none.
//
// A batch's sources may come from claims of two memberships: a claim the
// member lost keeps its source until the next plan, and answers the
// membership it was lost in (kafka's claimMembership), older than the
// generation the member rejoined in, which a new claim answers. A commit
// that includes the lost claim's partitions must carry the lost
// membership, so that the broker fences it, whichever source the plan
// happens to list last; under one membership every claim answers the same
// generation and the choice is the previous one (the last source).
func commitSession(sessions []kafka.Session) kafka.Session {
	var out kafka.Session
	var gen int32
	for _, s := range sessions {
		if s == nil {
			continue
		}
		if g := s.GenerationID(); out == nil || g <= gen {
			out, gen = s, g
		}
	}
	return out
}
