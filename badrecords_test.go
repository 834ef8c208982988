package weir

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/runtime"
)

// Each of weir's policies is the runtime's policy of the same meaning.
func TestBadRecordPolicyReachesTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		p    BadRecordPolicy
		want runtime.BadRecordPolicy
		name string
	}{
		{Fail, runtime.Fail, "fail"},
		{Skip, runtime.Skip, "skip"},
		{DeadLetter, runtime.DeadLetter, "dead-letter"},
		{DeadLetter + 1, runtime.BadRecordPolicy(3), "BadRecordPolicy(3)"},
	} {
		require.Equal(t, tc.want, tc.p.runtime())
		require.Equal(t, tc.name, tc.p.String())
	}
}
