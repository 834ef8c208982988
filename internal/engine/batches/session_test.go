package batches

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// generationSession is a kafka.Session that only answers its membership.
type generationSession struct {
	id  string
	gen int32
}

func (s generationSession) MarkOffset(string, int32, int64) {}
func (s generationSession) Commit(context.Context) error    { return nil }
func (s generationSession) GenerationID() int32             { return s.gen }
func (s generationSession) MemberID() string                { return s.id }
func (s generationSession) GroupMetadata() kafka.GroupMetadata {
	return kafka.GroupMetadata{GroupID: "g", GenerationID: s.gen, MemberID: s.id}
}

// A batch whose sources come from a claim the member lost (it answers the
// generation it was lost in) and from one of its new membership commits
// with the lost membership, whichever comes last; under one membership,
// with the last source's session as before.
func TestCommitSessionCarriesTheLostMembership(t *testing.T) {
	lost := generationSession{"m-old", 10}
	live := generationSession{"m-new", 12}
	require.Equal(t, kafka.Session(lost), commitSession([]kafka.Session{lost, live}))
	require.Equal(t, kafka.Session(lost), commitSession([]kafka.Session{live, lost}))
	require.Equal(t, kafka.Session(lost), commitSession([]kafka.Session{live, nil, lost, live}))

	a, b := generationSession{"m", 12}, generationSession{"m", 12}
	a.id = "a"
	b.id = "b"
	require.Equal(t, kafka.Session(b), commitSession([]kafka.Session{a, b}))
	require.Nil(t, commitSession(nil))
	require.Nil(t, commitSession([]kafka.Session{nil}))
}
