package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// group reads the members from the group coordinator and each member's
// report from the member itself, in parallel. A member whose report cannot
// be read is listed with the reason; one no longer in the group is listed
// as gone for a window after it was last seen.
func (p *Page) group(ctx context.Context, since int64, auth string) Group {
	now := p.cfg.Now().UnixMilli()
	g := Group{Self: p.cfg.Self, Time: now, Graph: p.graph}
	ms, err := p.cfg.Members(ctx)
	if err != nil {
		g.Error = err.Error()
	}
	p.mu.Lock()
	for _, m := range ms {
		for id, data := range m.Peers {
			if _, ok := p.addrs[id]; !ok && len(data) > 0 {
				p.addrs[id] = string(data)
			}
		}
	}
	for _, m := range ms {
		addr, ok := string(m.Data), m.Reported && len(m.Data) > 0
		if ok {
			p.addrs[m.ID] = addr
		} else {
			addr = p.addrs[m.ID]
		}
		g.Members = append(g.Members, Member{ID: m.ID, Addr: addr, Self: addr == p.cfg.Self, Assigned: m.Assigned})
		if addr != "" {
			p.seen[addr] = now
		}
	}
	current := map[string]bool{}
	for _, m := range g.Members {
		current[m.Addr] = true
	}
	for addr, last := range p.seen {
		switch {
		case current[addr]:
		case now-last > p.cfg.Window.Milliseconds():
			delete(p.seen, addr)
		case err == nil:
			g.Gone = append(g.Gone, Gone{Addr: addr, LastSeen: last})
		}
	}
	p.mu.Unlock()
	slices.SortFunc(g.Members, func(a, b Member) int { return strings.Compare(a.Addr+a.ID, b.Addr+b.ID) })
	slices.SortFunc(g.Gone, func(a, b Gone) int { return strings.Compare(a.Addr, b.Addr) })

	var wg sync.WaitGroup
	for i := range g.Members {
		m := &g.Members[i]
		switch {
		case m.Self:
			l := p.local(since)
			m.Report = &l
		case m.Addr == "":
			m.Unreachable = "its address is not known yet (the group is rebalancing)"
		default:
			wg.Go(func() {
				l, err := p.peer(ctx, m.Addr, since, auth)
				if err != nil {
					m.Unreachable = err.Error()
					return
				}
				m.Report = &l
			})
		}
	}
	wg.Wait()
	return g
}

// peer reads another instance's report.
func (p *Page) peer(ctx context.Context, addr string, since int64, auth string) (Local, error) {
	ctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status/local?since="+strconv.FormatInt(since, 10), nil)
	if err != nil {
		return Local{}, err
	}
	req.Header.Set(ForwardedHeader, "1")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return Local{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Local{}, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var l Local
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return Local{}, fmt.Errorf("reading its report: %w", err)
	}
	return l, nil
}
