package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/topology"
)

type nopSink struct{}

func (nopSink) Claim(context.Context, string, sink.Task, int32) (sink.Progress, error) {
	return sink.Progress{}, nil
}
func (nopSink) Write(context.Context, *sink.Batch) error { return nil }

func TestWithSinkIsCheckedAgainstTheTopology(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "in", serde.String(), serde.String()).ToSink("rows")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	base := []weir.Option{weir.WithBrokers("localhost:9092"), weir.WithApplicationID("app")}
	if _, err := weir.New(topo, append(base, weir.WithSink("rows", nopSink{}))...); err != nil {
		t.Fatalf("a registered sink: %v", err)
	}
	_, err = weir.New(topo, append(base, weir.WithSink("other", nopSink{}), weir.WithSink("nil", nil), weir.WithCacheMaxBytes(1<<20))...)
	if !errors.Is(err, weir.ErrConfig) {
		t.Fatalf("New: %v, want ErrConfig", err)
	}
	for _, want := range []string{
		`ToSink("rows"): no sink registered`,
		`WithSink("other"): the topology writes no sink of that name`,
		`WithSink("nil"): nil sink`,
		`WithCacheMaxBytes: record caches do not work with external sinks`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}
