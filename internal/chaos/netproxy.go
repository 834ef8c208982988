package chaos

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A netProxy is one instance's way to the brokers in a scenario with
// network faults: the instance is given the proxy's addresses instead of
// the brokers', and every connection it opens goes through a route of
// the proxy, one per broker, on a loopback port of its own. Because a
// client learns the brokers' addresses from the brokers themselves, the
// proxy speaks enough of the Kafka protocol to rewrite them: in the
// answers to Metadata, FindCoordinator and DescribeCluster every broker's
// host and port become its route's, so that the instance never dials a
// broker directly (Unparsed counts answers it could not decode and passed
// on as they were; a scenario fails if any).
//
// The routes are where the network faults happen (netfaults.go): a route
// blackholed forwards nothing and its connections hang as across a cut
// link, so that the broker is unreachable from this instance only; a
// route can add a delay to every frame and lose some, a lost frame costing
// what a lost segment costs TCP's reader — a retransmission timeout.
// Working in user space, it needs no root and no kernel module, works the
// same on kfake and on a real cluster, and leaves nothing behind when the
// runner dies: tc netem and iptables, the kernel's ways, are not on every
// machine (this suite's CI machine has neither sch_netem nor iptables).
type netProxy struct {
	name string
	mu   sync.Mutex
	// routes by the broker's real address, created when the address is
	// first seen (a bootstrap address, or one in an answer).
	routes map[string]*route
	closed bool
	// Unparsed counts broker answers the proxy could not decode.
	Unparsed atomic.Int64
}

// A route forwards the connections to one broker.
type route struct {
	broker string // the real address
	ln     net.Listener
	p      *netProxy

	mu sync.Mutex
	// cut is non-nil while the route is blackholed; closed when healed.
	cut   chan struct{}
	delay time.Duration
	loss  float64
	rng   *mrand.Rand
	conns map[net.Conn]struct{}
}

// newNetProxy returns a proxy with a route for each bootstrap broker.
func newNetProxy(name string, brokers []string, seed uint64) (*netProxy, error) {
	p := &netProxy{name: name, routes: map[string]*route{}}
	for i, b := range brokers {
		if _, err := p.route(b, seed+uint64(i)); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Bootstrap returns the routes' addresses of the given brokers, for the
// instance's WithBrokers.
func (p *netProxy) Bootstrap(brokers []string) []string {
	var addrs []string
	for _, b := range brokers {
		if r, err := p.route(b, 0); err == nil {
			addrs = append(addrs, r.ln.Addr().String())
		}
	}
	return addrs
}

// Brokers returns the real addresses the proxy has routes to, sorted.
func (p *netProxy) Brokers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var bs []string
	for b := range p.routes {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	return bs
}

// route returns the route to broker, starting it if new.
func (p *netProxy) route(broker string, seed uint64) (*route, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.routes[broker]; r != nil {
		return r, nil
	}
	if p.closed {
		return nil, errors.New("chaos: proxy closed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy listen: %w", err)
	}
	r := &route{broker: broker, ln: ln, p: p, rng: mrand.New(mrand.NewPCG(seed, uint64(len(p.routes)))), conns: map[net.Conn]struct{}{}}
	p.routes[broker] = r
	go r.accept()
	return r, nil
}

// Close stops every route and closes every connection.
func (p *netProxy) Close() {
	p.mu.Lock()
	p.closed = true
	routes := make([]*route, 0, len(p.routes))
	for _, r := range p.routes {
		routes = append(routes, r)
	}
	p.mu.Unlock()
	for _, r := range routes {
		_ = r.ln.Close()
		r.mu.Lock()
		for c := range r.conns {
			_ = c.Close()
		}
		if r.cut != nil {
			close(r.cut)
			r.cut = nil
		}
		r.mu.Unlock()
	}
}

// Cut blackholes the route to broker: nothing is forwarded either way and
// new connections are accepted but never answered, until Heal.
func (p *netProxy) Cut(broker string) error {
	r, err := p.route(broker, 0)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut == nil {
		r.cut = make(chan struct{})
	}
	return nil
}

// Heal ends a Cut: the connections it caught are closed (their requests
// timed out on the client's side long ago), new ones go through again.
func (p *netProxy) Heal(broker string) {
	r, err := p.route(broker, 0)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut != nil {
		close(r.cut)
		r.cut = nil
	}
}

// Degrade adds delay to every frame forwarded to and from broker and
// loses each with probability loss (the frame then waits a retransmission
// timeout more, doubled for each loss in a row); zero values restore the
// route.
func (p *netProxy) Degrade(broker string, delay time.Duration, loss float64) error {
	r, err := p.route(broker, 0)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay, r.loss = delay, loss
	return nil
}

func (r *route) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.serve(c)
	}
}

// track adds or removes a connection from the route's set; it reports
// false if the proxy is closed (the connection is then closed).
func (r *route) track(c net.Conn, add bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !add {
		delete(r.conns, c)
		return true
	}
	r.p.mu.Lock()
	closed := r.p.closed
	r.p.mu.Unlock()
	if closed {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

// serve forwards one client connection to the broker.
func (r *route) serve(client net.Conn) {
	if !r.track(client, true) {
		return
	}
	defer r.track(client, false)
	defer client.Close()
	// A connection made while the route is cut hangs until it heals, as a
	// SYN into a blackhole does (the client times it out first).
	if cut := r.cutNow(); cut != nil {
		<-cut
		return
	}
	broker, err := net.DialTimeout("tcp", r.broker, 10*time.Second)
	if err != nil {
		// A broker that is down refuses; the nearest the proxy can do
		// after accepting is a reset, not an orderly close (EOF).
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return
	}
	if !r.track(broker, true) {
		return
	}
	defer r.track(broker, false)
	defer broker.Close()
	// The requests whose answers carry broker addresses, by correlation id.
	pending := &pendingKeys{m: map[int32][2]int16{}}
	done := make(chan struct{}, 2)
	go func() { r.pipe(broker, client, pending, true); done <- struct{}{} }()
	go func() { r.pipe(client, broker, pending, false); done <- struct{}{} }()
	<-done // either side ends: close both (the defers), the other ends too
}

// pendingKeys maps correlation ids to the api key and version of the
// requests whose answers the proxy rewrites.
type pendingKeys struct {
	mu sync.Mutex
	m  map[int32][2]int16
}

// maxFrame bounds a frame the proxy reads (Kafka's own default for a
// request is 100 MiB).
const maxFrame = 256 << 20

// pipe forwards frames from src to dst; requests (toBroker) are noted in
// pending when their answers carry addresses, and those answers rewritten.
func (r *route) pipe(dst io.Writer, src io.Reader, pending *pendingKeys, toBroker bool) {
	br := bufio.NewReaderSize(src, 64<<10)
	var size [4]byte
	for {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > maxFrame {
			return
		}
		frame := make([]byte, 4+n)
		copy(frame, size[:])
		if _, err := io.ReadFull(br, frame[4:]); err != nil {
			return
		}
		if toBroker {
			if n >= 8 {
				key := int16(binary.BigEndian.Uint16(frame[4:]))
				version := int16(binary.BigEndian.Uint16(frame[6:]))
				corr := int32(binary.BigEndian.Uint32(frame[8:]))
				if rewritten(key) {
					pending.mu.Lock()
					pending.m[corr] = [2]int16{key, version}
					pending.mu.Unlock()
				}
			}
		} else if n >= 4 {
			corr := int32(binary.BigEndian.Uint32(frame[4:]))
			pending.mu.Lock()
			kv, ok := pending.m[corr]
			delete(pending.m, corr)
			pending.mu.Unlock()
			if ok {
				if out, err := r.p.rewrite(kv[0], kv[1], frame); err == nil {
					frame = out
				} else {
					r.p.Unparsed.Add(1)
				}
			}
		}
		if !r.hold() {
			return
		}
		if _, err := dst.Write(frame); err != nil {
			return
		}
	}
}

// hold waits what the route's faults make a frame wait; false if the
// frame must not go (the route was cut meanwhile: the connection ends
// once it heals).
func (r *route) hold() bool {
	if cut := r.cutNow(); cut != nil {
		<-cut
		return false
	}
	r.mu.Lock()
	wait := r.delay
	if r.delay > 0 {
		wait += time.Duration(r.rng.Int64N(int64(r.delay)/5 + 1)) // ±10 % jitter around 1.1×
	}
	for rto := 200 * time.Millisecond; r.loss > 0 && r.rng.Float64() < r.loss && rto <= 3*time.Second; rto *= 2 {
		wait += rto
	}
	r.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
	// Cut while it waited: dropped as well.
	if cut := r.cutNow(); cut != nil {
		<-cut
		return false
	}
	return true
}

func (r *route) cutNow() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// rewritten reports whether answers to key carry broker addresses.
func rewritten(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.Metadata, kmsg.FindCoordinator, kmsg.DescribeCluster:
		return true
	}
	return false
}

// rewrite returns the response frame with every broker address replaced
// by its route's.
func (p *netProxy) rewrite(key, version int16, frame []byte) ([]byte, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, fmt.Errorf("chaos: proxy: no response type for key %d", key)
	}
	resp.SetVersion(version)
	body := frame[8:] // past the size and the correlation id
	if resp.IsFlexible() {
		// The response header's tagged fields: a count, then each tag.
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	swap := func(host *string, port *int32) error {
		r, err := p.route(net.JoinHostPort(*host, strconv.Itoa(int(*port))), uint64(*port))
		if err != nil {
			return err
		}
		a := r.ln.Addr().(*net.TCPAddr)
		*host, *port = a.IP.String(), int32(a.Port)
		return nil
	}
	var errs []error
	switch v := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range v.Brokers {
			errs = append(errs, swap(&v.Brokers[i].Host, &v.Brokers[i].Port))
		}
	case *kmsg.FindCoordinatorResponse:
		if v.Host != "" {
			errs = append(errs, swap(&v.Host, &v.Port))
		}
		for i := range v.Coordinators {
			if v.Coordinators[i].Host != "" {
				errs = append(errs, swap(&v.Coordinators[i].Host, &v.Coordinators[i].Port))
			}
		}
	case *kmsg.DescribeClusterResponse:
		for i := range v.Brokers {
			errs = append(errs, swap(&v.Brokers[i].Host, &v.Brokers[i].Port))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]byte, 8, len(frame)+64)
	copy(out[4:8], frame[4:8])
	if resp.IsFlexible() {
		out = append(out, 0) // no header tags
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// skipTags returns b past a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("chaos: proxy: bad tag count")
	}
	b = b[k:]
	for range n {
		_, k := binary.Uvarint(b) // the tag
		if k <= 0 {
			return nil, errors.New("chaos: proxy: bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("chaos: proxy: bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}
