package statedir

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNoSpace(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("offsets: write plan 3: %w", syscall.ENOSPC), true},
		{fmt.Errorf("quota: %w", syscall.EDQUOT), true},
		{errors.New("While writing to file: write /s/000001.vlog: no space left on device"), true},
		{fmt.Errorf("open: %w", syscall.EACCES), false},
	} {
		require.Equal(t, tc.want, NoSpace(tc.err), "%v", tc.err)
	}
}

func TestFree(t *testing.T) {
	free, err := Free(t.TempDir())
	require.NoError(t, err)
	require.Positive(t, free)
	_, err = Free("/no/such/dir")
	require.Error(t, err)
}
