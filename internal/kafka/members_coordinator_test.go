package kafka

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
)

// A describe whose connection to the group coordinator breaks (its broker
// died), or that the broker answers NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE (the group moved), is sent again at once to
// the coordinator found anew: GroupMembers answers in the same call.
// Without the second try each of these failed the call (issue 43: every
// query of every instance answered 503 "describe group …: EOF" for 11 s).
func TestGroupMembersFindsTheCoordinatorAgain(t *testing.T) {
	refuse := func(code int16) func(kmsg.Request) (kmsg.Response, error) {
		return func(req kmsg.Request) (kmsg.Response, error) {
			r := req.(*kmsg.DescribeGroupsRequest)
			resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
			for _, g := range r.Groups {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp, nil
		}
	}
	for _, tc := range []struct {
		name string
		fail func(kmsg.Request) (kmsg.Response, error)
	}{
		{"connection broken", func(kmsg.Request) (kmsg.Response, error) { return nil, errors.New("test: the broker died") }},
		{"not coordinator", refuse(kerr.NotCoordinator.Code)},
		{"coordinator not available", refuse(kerr.CoordinatorNotAvailable.Code)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 1}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			a, err := NewAdmin(Config{Brokers: b.Addrs()})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if _, err := a.GroupMembers(t.Context(), "g"); err != nil { // the coordinator is known
				t.Fatalf("first describe: %v", err)
			}
			var failed atomic.Int32
			c := kfakehook.Cluster(b)
			c.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
				failed.Add(1)
				resp, err := tc.fail(req)
				return resp, err, true
			})
			if _, err := a.GroupMembers(t.Context(), "g"); err != nil {
				t.Fatalf("describe after one failed try: %v", err)
			}
			if failed.Load() != 1 {
				t.Fatalf("%d describes failed, want 1", failed.Load())
			}
		})
	}
}

// A coordinator that keeps failing fails the call, with the cause, after
// two tries.
func TestGroupMembersFailsWhenTheCoordinatorStaysGone(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := NewAdmin(Config{Brokers: b.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var failed atomic.Int32
	c := kfakehook.Cluster(b)
	c.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		failed.Add(1)
		r := req.(*kmsg.DescribeGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = r.Groups[0], kerr.NotCoordinator.Code
		resp.Groups = append(resp.Groups, rg)
		return resp, nil, true
	})
	_, err = a.GroupMembers(t.Context(), "g")
	if err == nil || !coordinatorGone(err) {
		t.Fatalf("describe of a group whose coordinator stays gone: %v, want NOT_COORDINATOR", err)
	}
	if failed.Load() != 2 {
		t.Fatalf("%d describes, want 2", failed.Load())
	}
}
