package tasks

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// memberSession is a group session with a member id and a generation.
type memberSession struct {
	kafka.Session
	member     string
	generation int32
}

func (s memberSession) MemberID() string    { return s.member }
func (s memberSession) GenerationID() int32 { return s.generation }
func (s memberSession) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: "g", MemberID: s.member, GenerationID: s.generation}
}

// A claim of a member out of its group (franz-go keeps the last
// generation with an empty member id after UNKNOWN_MEMBER_ID) acquires its
// task without a generation; a member's claim in its generation.
func TestClaimMembershipOfAMemberOutOfItsGroup(t *testing.T) {
	require.Equal(t, kafka.GroupMetadata{GroupID: "g", GenerationID: -1}, claimMembership(memberSession{member: "", generation: 4}))
	require.Equal(t, kafka.GroupMetadata{GroupID: "g", MemberID: "m-1", GenerationID: 4}, claimMembership(memberSession{member: "m-1", generation: 4}))
}
