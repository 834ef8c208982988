package chaos

import (
	"context"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/third_party/kfake"
)

// A client bootstrapped through an instance's proxy only ever learns the
// proxy's addresses, produces and consumes through it; cutting one broker
// in that proxy makes the broker unreachable for that client only, healing
// restores it, and a degraded route delays its answers.
func TestNetProxy(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "t"))
	require.NoError(t, err)
	defer c.Close()
	real := map[int32]string{} // node id → the broker's real address
	direct, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer direct.Close()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(t.Context(), direct)
	require.NoError(t, err)
	for _, b := range meta.Brokers {
		real[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	require.Len(t, real, 3)

	a, err := newNetProxy("a", c.ListenAddrs(), 1)
	require.NoError(t, err)
	defer a.Close()
	b, err := newNetProxy("b", c.ListenAddrs(), 2)
	require.NoError(t, err)
	defer b.Close()
	client := func(p *netProxy) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Bootstrap(c.ListenAddrs())...), kgo.ConsumeTopics("t"),
			kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	ca, cb := client(a), client(b)

	// Every address a client learns is one of its proxy's routes.
	routes := map[string]bool{}
	for _, r := range a.routes {
		routes[r.ln.Addr().String()] = true
	}
	meta, err = kmsg.NewPtrMetadataRequest().RequestWith(t.Context(), ca)
	require.NoError(t, err)
	require.Len(t, meta.Brokers, 3)
	for _, br := range meta.Brokers {
		addr := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		require.True(t, routes[addr], "broker %d at %s, not a route of the proxy (%v)", br.NodeID, addr, routes)
	}
	for _, v := range []int16{3, 4} { // FindCoordinator before and after its batched form
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKey, fc.CoordinatorKeys = v, "g", []string{"g"}
		resp, err := ca.Request(t.Context(), fc)
		require.NoError(t, err)
		f := resp.(*kmsg.FindCoordinatorResponse)
		host, port := f.Host, f.Port
		if v >= 4 {
			require.Len(t, f.Coordinators, 1)
			host, port = f.Coordinators[0].Host, f.Coordinators[0].Port
		}
		require.True(t, routes[net.JoinHostPort(host, strconv.Itoa(int(port)))], "v%d coordinator at %s:%d", v, host, port)
	}
	require.Equal(t, sortedValues(real), a.Brokers(), "routes to the brokers only")

	// Records go through and come back.
	for i := range 30 {
		require.NoError(t, ca.ProduceSync(t.Context(), &kgo.Record{Topic: "t", Value: []byte(strconv.Itoa(i))}).FirstErr())
	}
	got, deadline := 0, time.Now().Add(10*time.Second)
	for got < 30 {
		require.True(t, time.Now().Before(deadline), "consumed %d of 30", got)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		got += ca.PollFetches(ctx).NumRecords()
		cancel()
	}
	require.Zero(t, a.Unparsed.Load())

	// Cut broker 1 in a: a's client cannot reach it, b's can.
	ask := func(cl *kgo.Client, d time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		start := time.Now()
		_, err := cl.Broker(1).Request(ctx, kmsg.NewPtrApiVersionsRequest())
		return time.Since(start), err
	}
	require.NoError(t, a.Cut(real[1]))
	_, err = ask(ca, 1500*time.Millisecond)
	require.Error(t, err, "broker 1 answered through a cut route")
	_, err = ask(cb, 5*time.Second)
	require.NoError(t, err, "the other instance's route is not cut")
	_, err = ask(ca, 1500*time.Millisecond)
	require.Error(t, err)
	a.Heal(real[1])
	require.Eventually(t, func() bool { _, err := ask(ca, time.Second); return err == nil },
		15*time.Second, 100*time.Millisecond, "broker 1 never reachable again after the heal")

	// A degraded route: 150 ms each way on every frame.
	took, err := ask(cb, 5*time.Second)
	require.NoError(t, err)
	require.Less(t, took, 150*time.Millisecond, "an answer on a clean route")
	require.NoError(t, b.Degrade(real[1], 150*time.Millisecond, 0))
	took, err = ask(cb, 5*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, took, 300*time.Millisecond, "an answer on a degraded route")
	require.NoError(t, b.Degrade(real[1], 0, 0))
	require.Zero(t, a.Unparsed.Load()+b.Unparsed.Load())
}

func sortedValues(m map[int32]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// A lost frame waits retransmission timeouts: with loss 1 every frame
// waits the longest chain (200, 400, 800 and 1,600 ms), with loss 0 none.
func TestRouteLoss(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	p := &netProxy{routes: map[string]*route{}}
	r, err := p.route("127.0.0.1:1", 1)
	require.NoError(t, err)
	defer p.Close()
	start := time.Now()
	require.True(t, r.hold())
	require.Less(t, time.Since(start), 100*time.Millisecond)
	r.loss = 1
	start = time.Now()
	require.True(t, r.hold())
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond*(1+2+4+8))
}

// A connection to a route whose broker is down is reset, as near as the
// proxy can come to the refusal the client would have met without it.
func TestRouteToADownBrokerResets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	p, err := newNetProxy("p", []string{down}, 1)
	require.NoError(t, err)
	defer p.Close()
	c, err := net.Dial("tcp", p.Bootstrap([]string{down})[0])
	if err == nil { // the reset may come before the dial returns, or after
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = c.Read(make([]byte, 1))
	}
	require.ErrorIs(t, err, syscall.ECONNRESET)
}
