package query

import (
	"net/http"
	"strconv"
)

// OwnerMapAgeHeader is set on a reply that an instance routed with an owner
// map that is not current: the group coordinator could not be read (its
// broker died, and the cluster has not moved the group yet), so the owner
// was found in the map of the last read that succeeded. Its value is that
// map's age in milliseconds. The same age is in the JSON body
// ("ownerMapAgeMs") of key and range replies whose owner runs this version,
// and of error replies. On a forwarded request it tells the owner the age,
// for its body.
//
// A reply routed with a stale map is no less right than another: only the
// instance that runs a partition answers for it (it turns any other
// forwarded request away), so the age says how long the cluster has gone
// without a readable group, not how old the answer's value is.
const OwnerMapAgeHeader = "X-Weir-Owner-Map-Age-Ms"

// setOwnerMapAge sets OwnerMapAgeHeader on w if old is a stale map, and
// returns its age for a body (nil if the map is current).
func setOwnerMapAge(w http.ResponseWriter, old *staleMap) *int64 {
	if old == nil {
		return nil
	}
	ms := old.Age.Milliseconds()
	w.Header().Set(OwnerMapAgeHeader, strconv.FormatInt(ms, 10))
	return &ms
}

// forwardedOwnerMapAge is the owner map age a forwarded request carries,
// nil for a request a client sent here or one routed with a current map.
func forwardedOwnerMapAge(r *http.Request) *int64 {
	if r.Header.Get(ForwardedHeader) == "" {
		return nil
	}
	return parseOwnerMapAge(r.Header.Get(OwnerMapAgeHeader))
}

// parseOwnerMapAge reads an OwnerMapAgeHeader value; nil if absent or
// not a number of milliseconds.
func parseOwnerMapAge(v string) *int64 {
	if v == "" {
		return nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return nil
	}
	return &ms
}

// maxAge returns the larger of two ages, either of which may be absent.
func maxAge(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}
