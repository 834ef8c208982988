package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// Routing a store query: which copy of the partition answers it.
//
// The owner's copy (role "active") answers by default. A query that says
// how stale it accepts (?maxLag=N, changelog records) may be answered by
// the asked instance's own copy — a standby's, or the owner's own while it
// restores — when that copy lags at most N records (KIP-535's stale
// queries); otherwise it goes to the owner, with the same maxLag. Every
// copy holds committed rows only, so a stale answer is an older committed
// value, never an aborted or torn one; only owner answers are sure never
// to go back in time.

// MaxLagParam is the query parameter that bounds the lag of the copy
// that may answer (changelog records; absent: the owner only).
const MaxLagParam = "maxLag"

// The causes of 503 replies (the "cause" field of the error body and of
// weir_query_requests_total).
const (
	CauseNoOwner        = "no_owner"        // no member runs the partition: the group is rebalancing
	CauseAddressUnknown = "address_unknown" // the owner joined in a rebalance that has not completed
	CauseNoAddress      = "no_address"      // the owner advertises no HTTP address
	CauseRestoring      = "restoring"       // assigned to the asked instance, which restores it
	CauseUnreachable    = "unreachable"     // the owner did not answer
	CauseMoving         = "moving"          // the owner turned the request away twice
	CauseOwnerRestarted = "owner_restarted" // the owner is gone; another member, restarted at its address, does not run the partition yet
	CauseGroupRead      = "group_read_failed"
	CauseStarting       = "starting"
)

// RebalanceWait bounds how long a query waits for a partition between
// owners, or for an owner the group coordinator does not describe yet,
// before it answers 503.
const RebalanceWait = 1500 * time.Millisecond

// WaitParam is the query parameter that sets how long a query may wait
// for an owner instead of RebalanceWait (a Go duration, at most MaxWait):
// a client that prefers a late answer to a 503 during a rebalance.
const WaitParam = "wait"

// MaxWait bounds ?wait=.
const MaxWait = 30 * time.Second

// ownerWait reads ?wait=: RebalanceWait when absent.
func ownerWait(r *http.Request) (time.Duration, error) {
	t := r.URL.Query().Get(WaitParam)
	if t == "" {
		return RebalanceWait, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 || d > MaxWait {
		return 0, fmt.Errorf("query: %s %q is not a duration in [0s, %v]", WaitParam, t, MaxWait)
	}
	return d, nil
}

// maxLag reads ?maxLag=: -1 when absent (the owner only).
func maxLag(r *http.Request) (int64, error) {
	t := r.URL.Query().Get(MaxLagParam)
	if t == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("query: %s %q is not a number of records >= 0", MaxLagParam, t)
	}
	return n, nil
}

// open returns the copy of partition p that answers r here: the active
// one, or — within r's maxLag — a standby or restoring one. Otherwise it
// answers r itself (forwarded to the owner, or an error) and returns
// false.
func (s *server) open(w http.ResponseWriter, r *http.Request, info tasks.StoreInfo, p int32, e apiError) (statestore.Store, tasks.Copy, bool) {
	bound, err := maxLag(r)
	if _, werr := ownerWait(r); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		e.Error = err.Error()
		writeError(w, http.StatusBadRequest, e)
		return nil, tasks.Copy{}, false
	}
	st, err := s.rt.QueryStore(info.Spec.Name, p)
	if err == nil {
		return st, tasks.Copy{Role: tasks.RoleActive}, true
	}
	stale := ""
	if errors.Is(err, tasks.ErrNotOwner) && bound >= 0 {
		st, c, cerr := s.rt.QueryCopy(r.Context(), info.Spec.Name, p, bound)
		if cerr == nil {
			return st, c, true
		}
		stale = "; " + cerr.Error()
	}
	s.elsewhere(w, r, info, p, err, e, bound, stale)
	return nil, tasks.Copy{}, false
}

// elsewhere answers a request for a partition this instance does not run
// (or, within maxLag, has no fresh enough copy of): forwarded to its
// owner, or refused with the cause. A forward that the owner turns away
// (421: it no longer runs the partition) or that cannot reach it reads
// the group again and follows the partition until RebalanceWait (or the
// query's ?wait=) has passed: an owner killed outright stays listed until its session times
// out, then the partition moves. A query with maxLag (bound >= 0) whose
// owner cannot answer at once asks the other instances' copies first
// (copies). stale says why the local copy could not serve, if maxLag
// asked for one.
func (s *server) elsewhere(w http.ResponseWriter, r *http.Request, info tasks.StoreInfo, p int32, err error, e apiError, bound int64, stale string) {
	if !errors.Is(err, tasks.ErrNotOwner) {
		e.Error = err.Error()
		writeError(w, http.StatusInternalServerError, e)
		return
	}
	name := info.Spec.Name
	var old *staleMap // the owner map the last lookup served, if not current
	probed := false   // the other instances were asked (probe)
	fail := func(cause string, own *Owner, format string, args ...any) {
		// Before a 503, the instances the last read listed are asked
		// once, in case the group's description lags the instances: one
		// that runs the partition answers for it; none other does.
		if !probed {
			probed = true
			skip := ""
			if own != nil {
				skip = own.Addr
			}
			if s.probe(w, r, old, skip) {
				return
			}
		}
		msg := fmt.Sprintf(format, args...)
		if old != nil {
			// The owner map these causes come from is not current: the
			// cause is that the group could not be read.
			switch cause {
			case CauseNoOwner, CauseMoving, CauseRestoring, CauseAddressUnknown:
				cause = CauseGroupRead
			}
			msg += fmt.Sprintf("; %v: the owner map is the last one read, %v old", old.Err, old.Age.Round(time.Millisecond))
			e.OwnerMapAgeMs = setOwnerMapAge(w, old)
		}
		e.Error, e.Cause, e.Owner = msg+stale, cause, own
		writeError(w, http.StatusServiceUnavailable, e)
	}
	if r.Header.Get(ForwardedHeader) != "" {
		e.Error = fmt.Sprintf("query: %s does not run partition %d of store %q", s.cfg.Self, p, name) + stale
		if s.rt.AssignedHere(name, p) {
			e.Error = fmt.Sprintf("query: %s restores partition %d of store %q", s.cfg.Self, p, name) + stale
			e.Cause = CauseRestoring
		}
		writeError(w, http.StatusMisdirectedRequest, e)
		return
	}
	id := processor.TaskID{Subtopology: info.Subtopology, Partition: p}
	wait, _ := ownerWait(r) // open checked it
	deadline := time.Now().Add(wait)
	var notBefore time.Time // the first attempt takes the cached owner
	var failed *Owner       // the owner that did not answer
	var forwardErr error    // why
	for attempt := 0; ; attempt++ {
		if attempt == 1 && bound >= 0 {
			if s.copies(w, r, failed) {
				return
			}
			stale += "; no other instance answered from a copy within " + MaxLagParam
		}
		// A partition between owners, or an owner the coordinator does
		// not describe yet, is waited for (reading the group every
		// refreshEvery) until RebalanceWait has passed.
		last := attempt > 0 && !time.Now().Before(deadline)
		if attempt > 1 {
			select {
			case <-r.Context().Done():
				last = true
			case <-time.After(refreshEvery):
			}
		}
		started := time.Now()
		own, ok, o, lerr := s.owners.lookup(r.Context(), id, notBefore)
		notBefore, old = started, o
		// The group cannot be read and the owner the last map names
		// could not answer: the partition may have moved since. The
		// other instances are asked once; only the one that runs it
		// answers.
		if old != nil && attempt > 0 && !probed {
			probed = true
			skip := ""
			if ok {
				skip = own.Addr // asked again below
			}
			if s.probe(w, r, old, skip) {
				return
			}
		}
		switch {
		case lerr != nil:
			fail(CauseGroupRead, nil, "%s", lerr.Error())
			return
		case !ok && !last:
			continue
		case !ok:
			fail(CauseNoOwner, nil, "query: partition %d of store %q has no owner now (the group is rebalancing)", p, name)
			return
		case own.Addr == s.cfg.Self && !own.unreported && !last:
			continue
		case own.Addr == s.cfg.Self && !own.unreported:
			fail(CauseRestoring, &own, "query: partition %d of store %q is assigned here but not running yet (restoring)", p, name)
			return
		case own.unreported && !last:
			continue
		case own.unreported:
			fail(CauseAddressUnknown, &own, "query: the owner of partition %d of store %q, member %s, is new and the group has been rebalancing ever since: the group coordinator does not report its address until the group is stable", p, name, own.Member)
			return
		case own.Addr == "" && attempt == 0:
			continue
		case own.Addr == "":
			fail(CauseNoAddress, &own, "query: the owner of partition %d of store %q, member %s, advertises no HTTP address (WithHTTP)", p, name, own.Member)
			return
		case failed != nil && *failed == own && !last:
			continue // still listed: wait for the group to move the partition
		case failed != nil && *failed == own:
			fail(CauseUnreachable, &own, "query: owner %s (member %s) of partition %d of store %q is unreachable: %v", own.Addr, own.Member, p, name, forwardErr)
			return
		}
		status, ctype, body, ferr := s.forward(r.Context(), own.Addr, r, old)
		// A 503 from the owner's address is an instance there that is
		// starting (topics not ready): not the member the group lists,
		// which ran the partition, but one restarted at its address. It
		// is turned away like a 421, never passed on as this instance's
		// cause.
		starting := status == http.StatusServiceUnavailable
		if starting {
			status = http.StatusMisdirectedRequest
		}
		switch {
		case ferr != nil && !last:
			failed, forwardErr = &own, ferr
			continue // it may have left: read the group again
		case ferr != nil:
			fail(CauseUnreachable, &own, "query: owner %s (member %s) of partition %d of store %q is unreachable: %v", own.Addr, own.Member, p, name, ferr)
			return
		case status == http.StatusMisdirectedRequest && !last:
			continue // it no longer runs the partition: read the group again
		case status == http.StatusMisdirectedRequest && misdirectedCause(body) == CauseRestoring:
			fail(CauseRestoring, &own, "query: the owner of partition %d of store %q, %s (member %s), restores it", p, name, own.Addr, own.Member)
			return
		case status == http.StatusMisdirectedRequest && starting:
			fail(CauseOwnerRestarted, &own, "query: the owner of partition %d of store %q, member %s, is gone: the instance at its address %s restarted and is starting (the group moves the partition when %s's session times out)", p, name, own.Member, own.Addr, own.Member)
			return
		case status == http.StatusMisdirectedRequest:
			if other, ok := s.owners.sharing(own); ok {
				fail(CauseOwnerRestarted, &own, "query: the owner of partition %d of store %q, member %s, is gone: its address %s is member %s's now, an instance restarted there, which does not run the partition yet (the group moves it when %s's session times out)", p, name, own.Member, own.Addr, other, own.Member)
				return
			}
			fail(CauseMoving, &own, "query: partition %d of store %q is moving between instances: its owner as the group lists it, member %s at %s, turned the request away until the wait ended; try again", p, name, own.Member, own.Addr)
			return
		}
		setOwnerMapAge(w, old)
		copyReply(w, status, ctype, body)
		return
	}
}

// probe asks the instances the last read of the group listed (in random
// order; not this one, nor skip) for r, forwarded: the one that runs the
// partition answers (200 or 404), the others turn it away (421). It
// serves while the group cannot be read and the owner the last map names
// cannot answer. The first 200 or 404 is the reply; probe reports whether
// there was one.
func (s *server) probe(w http.ResponseWriter, r *http.Request, old *staleMap, skip string) bool {
	addrs := s.owners.addresses()
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	for _, addr := range addrs {
		if addr == s.cfg.Self || addr == "" || addr == skip {
			continue
		}
		ctx, cancel := context.WithTimeout(r.Context(), RebalanceWait)
		status, ctype, body, err := s.forward(ctx, addr, r, old)
		cancel()
		if err == nil && (status == http.StatusOK || status == http.StatusNotFound) {
			setOwnerMapAge(w, old)
			copyReply(w, status, ctype, body)
			return true
		}
	}
	return false
}

// copies asks the other instances the group lists (in random order, not
// this one, nor the owner that did not answer) for r, which carries its
// maxLag: each answers from its own copy of the partition if that copy
// lags at most maxLag (a standby's, or the owner's), else turns it away.
// The first 200 or 404 is the reply; copies reports whether there was
// one.
func (s *server) copies(w http.ResponseWriter, r *http.Request, failed *Owner) bool {
	addrs := s.owners.addresses()
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	for _, addr := range addrs {
		if addr == s.cfg.Self || addr == "" || (failed != nil && addr == failed.Addr) {
			continue
		}
		ctx, cancel := context.WithTimeout(r.Context(), RebalanceWait)
		status, ctype, body, err := s.forward(ctx, addr, r, nil)
		cancel()
		if err == nil && (status == http.StatusOK || status == http.StatusNotFound) {
			copyReply(w, status, ctype, body)
			return true
		}
	}
	return false
}

// misdirectedCause is the cause in a 421 reply's body.
func misdirectedCause(body []byte) string {
	var e apiError
	_ = json.Unmarshal(body, &e)
	return e.Cause
}

// counted counts the replies of a query endpoint (tasks.CountQuery,
// weir_query_requests_total), for requests a client sent here, not those
// another instance forwarded.
func (s *server) counted(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) != "" {
			h(w, r)
			return
		}
		ow := &outcomeWriter{ResponseWriter: w}
		h(ow, r)
		s.rt.CountQuery(ow.outcome())
	}
}

// outcomeWriter keeps a reply's status and the start of its body.
type outcomeWriter struct {
	http.ResponseWriter
	status int
	head   []byte
}

func (o *outcomeWriter) WriteHeader(status int) {
	if o.status == 0 {
		o.status = status
	}
	o.ResponseWriter.WriteHeader(status)
}

func (o *outcomeWriter) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	if n := min(len(b), 4096-len(o.head)); n > 0 {
		o.head = append(o.head, b[:n]...)
	}
	return o.ResponseWriter.Write(b)
}

// outcome names the reply: its result, and the role that answered or the
// cause of a 503 (from the JSON body).
func (o *outcomeWriter) outcome() tasks.QueryOutcome {
	var body struct {
		Role  string `json:"role"`
		Cause string `json:"cause"`
	}
	_ = json.Unmarshal(o.head, &body) // a long range reply does not decode: no role
	switch o.status {
	case http.StatusOK:
		return tasks.QueryOutcome{Result: "answered", Cause: body.Role}
	case http.StatusNotFound:
		return tasks.QueryOutcome{Result: "not_found"}
	case http.StatusServiceUnavailable:
		return tasks.QueryOutcome{Result: "unavailable", Cause: body.Cause}
	case http.StatusBadRequest:
		return tasks.QueryOutcome{Result: "bad_request"}
	}
	return tasks.QueryOutcome{Result: "error", Cause: strconv.Itoa(o.status)}
}
