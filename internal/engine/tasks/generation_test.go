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

// A claim of a member out of its group (franz-go keeps the last
// generation with an empty member id after UNKNOWN_MEMBER_ID) acquires its
// task without a generation; a member's claim in its generation.
func TestClaimGenerationOfAMemberOutOfItsGroup(t *testing.T) {
	require.Equal(t, int32(-1), claimGeneration(memberSession{member: "", generation: 4}))
	require.Equal(t, int32(4), claimGeneration(memberSession{member: "m-1", generation: 4}))
}
