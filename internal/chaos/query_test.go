package chaos

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The query check finds every kind of wrong answer and untrue cause, and
// only those.
func TestQueryCheck(t *testing.T) {
	q := newQueryClient(context.Background(), 1, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"})
	defer q.close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a1 := Agg{Count: 1, Sum: 5, Min: 5, Max: 5, LastK: 1, LastID: 1}
	a2 := Agg{Count: 2, Sum: 7, Min: 2, Max: 5, LastK: 2, LastID: 9}
	committed := map[string][]Agg{"k": {a1, a2}}
	q.downs[1] = []downSpan{{from: at(1000), until: at(2000)}}
	ok := func(key string, stale bool, ms int, v Agg, role string) queryAnswer {
		return queryAnswer{key: key, stale: stale, asked: at(ms), took: 10 * time.Millisecond, status: http.StatusOK, value: v, role: role}
	}
	unavailable := func(ms int, cause, owner string) queryAnswer {
		return queryAnswer{key: "k", asked: at(ms), took: 100 * time.Millisecond, status: http.StatusServiceUnavailable, cause: cause, owner: owner}
	}
	q.answers = []queryAnswer{
		ok("k", false, 0, a2, "active"),
		ok("k", false, 5, a1, "active"),                         // asked before the first arrived: not ordered
		ok("k", true, 50, a1, "standby"),                        // stale may be older
		ok("k", false, 100, a1, "active"),                       // back in time
		ok("k", false, 200, a2, "standby"),                      // an owner-only query answered by a copy
		ok("k", true, 300, Agg{Count: 2}, "standby"),            // not committed
		{key: "k", asked: at(400), status: http.StatusNotFound}, // back in time too
		{key: "j", asked: at(500), status: http.StatusNotFound}, // a key before its first aggregate
		{key: "k", asked: at(600)},                              // down
		unavailable(1500, "unreachable", "127.0.0.1:2"),         // slot 1 was down
		unavailable(2500, "unreachable", "127.0.0.1:2"),         // it was up again
		unavailable(2600, "no_address", "127.0.0.1:3"),
		unavailable(2700, "no_owner", ""),
		unavailable(2800, "owner_restarted", "127.0.0.1:2"),                                       // slot 1 was killed before
		unavailable(2900, "owner_restarted", "127.0.0.1:3"),                                       // slot 2 never was
		{key: "k", wait: true, asked: at(3000), status: http.StatusOK, value: a1, role: "active"}, // owner-only: back in time
	}
	var r report
	rep := q.check("continuous", committed, &r)
	require.Equal(t, QueryTally{
		Asked: 13, Down: 1, Answered: 4, NotFound: 2,
		Roles:        map[string]int{"active": 3, "standby": 1},
		Unavailable:  map[string]int{"unreachable": 2, "no_address": 1, "no_owner": 1, "owner_restarted": 2},
		Inconsistent: 3, UntrueCauses: 3,
	}, func() QueryTally { t := rep.OwnerOnly; t.Examples = nil; return t }(), strings.Join(r.problems, "\n"))
	require.Equal(t, 1, rep.Stale.Inconsistent, strings.Join(r.problems, "\n"))
	require.Equal(t, 1, rep.Waiting.Inconsistent, strings.Join(r.problems, "\n"))
	require.Len(t, r.problems, 8)
	for i, want := range []string{"went back in time: count 1 after 2", "answered by a \"standby\" copy", "is not one of the key's 2 committed",
		"went back in time: count 0 after 2", "slot 1 (127.0.0.1:2) was up", "every instance serves HTTP", "slot 2 (127.0.0.1:3) was never killed", "went back in time: count 1 after 2"} {
		require.Contains(t, r.problems[i], want)
	}
	require.InDelta(t, 50, rep.OwnerOnly.Availability(), 0.01)
	require.Contains(t, rep.String(), "queries mode=continuous query=owner-only asked=13 live=12 answered=6 (50.0%; active 3, standby 1; not_found 2) unavailable=6")
}

// The answers file has a header and one line per query, in the order
// asked, with the reply's role or cause and owner map age.
func TestQueryAnswersFile(t *testing.T) {
	q := newQueryClient(context.Background(), 1, []string{"127.0.0.1:1"})
	defer q.close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q.answers = []queryAnswer{
		{key: "b", wait: true, asked: t0.Add(2 * time.Second), took: time.Second, status: http.StatusServiceUnavailable,
			cause: "group_read_failed", mapAge: 1500, msg: "query: no\towner"},
		{key: "a", asked: t0.Add(time.Second), took: 10 * time.Millisecond, status: http.StatusOK, value: Agg{Count: 3}, role: "active", mapAge: -1},
	}
	path := filepath.Join(t.TempDir(), "queries.tsv")
	require.NoError(t, q.writeAnswers(path, t0))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{
		"at\ttook\tkind\tslot\tkey\tstatus\tcount\trole_or_cause\tmap_age_ms\terror",
		"1.000\t0.010\towner\t0\ta\t200\t3\tactive\t-1\t",
		"2.000\t1.000\twait\t0\tb\t503\t0\tgroup_read_failed\t1500\tquery: no owner",
	}, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"))
}
