package tasks

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/weirstream/weir/sink"
)

// scriptedSink fails its writes with errs, in order, then succeeds.
type scriptedSink struct {
	errs   []error
	writes int
}

func (s *scriptedSink) Claim(context.Context, string, sink.Task, int32) (sink.Progress, error) {
	return sink.Progress{}, nil
}

func (s *scriptedSink) Write(context.Context, *sink.Batch) error {
	s.writes++
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		return err
	}
	return nil
}

func TestWriteOneSortsSinkErrors(t *testing.T) {
	outage := errors.New("connection refused")
	for _, tc := range []struct {
		name       string
		errs       []error
		wantWrites int
		rewind     bool
		fatal      bool
	}{
		{"written", nil, 1, false, false},
		{"an outage is tried again", []error{outage, outage}, 3, false, false},
		{"fenced rewinds at once", []error{sink.ErrFenced}, 1, true, false},
		{"permanent stops", []error{sink.ErrPermanent}, 1, false, true},
		{"a refused record under Fail stops", []error{ErrExternalRecord}, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Runtime{log: slog.New(slog.DiscardHandler)}
			s := &scriptedSink{errs: tc.errs}
			start := time.Now()
			err := r.writeOne(context.Background(), s, &sink.Batch{Sink: "x"})
			if s.writes != tc.wantWrites {
				t.Errorf("%d writes, want %d", s.writes, tc.wantWrites)
			}
			switch {
			case tc.rewind && !errors.Is(err, ErrRewind):
				t.Errorf("err %v, want ErrRewind", err)
			case tc.fatal && (err == nil || errors.Is(err, ErrRewind)):
				t.Errorf("err %v, want a fatal error", err)
			case !tc.rewind && !tc.fatal && err != nil:
				t.Errorf("err %v, want nil", err)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

func TestExternalBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 7: 5 * time.Second, 50: 5 * time.Second} {
		if got := externalBackoff(n); got != want {
			t.Errorf("externalBackoff(%d) = %v, want %v", n, got, want)
		}
	}
}
