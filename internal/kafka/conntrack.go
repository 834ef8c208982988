package kafka

import (
	"net"
	"sync"

	"github.com/IBM/sarama"
)

// connTracker is the dialer of a group's coordinator client: it remembers
// the connections it dials, so that they can be closed from outside
// sarama. sarama holds a broker's lock for the whole of a request, so
// Broker.Close cannot interrupt one; closing the socket can — the request
// then fails at once. A group uses it to stop while a JoinGroup waits for
// a rebalance (up to the rebalance timeout: longer than most shutdown
// grace periods).
type connTracker struct {
	dialer net.Dialer

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

// newConnTracker dials as sarama's own dialer would for sc.
func newConnTracker(sc *sarama.Config) *connTracker {
	return &connTracker{
		dialer: net.Dialer{Timeout: sc.Net.DialTimeout, KeepAlive: sc.Net.KeepAlive, LocalAddr: sc.Net.LocalAddr},
		conns:  make(map[*trackedConn]struct{}),
	}
}

// install makes sc's clients dial through t (sarama's proxy hook; TLS is
// still layered on top by sarama).
func (t *connTracker) install(sc *sarama.Config) {
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = t
}

// Dial implements proxy.Dialer.
func (t *connTracker) Dial(network, addr string) (net.Conn, error) {
	c, err := t.dialer.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// closeAll closes every open connection: requests in flight on them fail.
// sarama dials again for the next request.
func (t *connTracker) closeAll() {
	t.mu.Lock()
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}
