package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The auth hook answers 401 for an error, 403 for one wrapping
// ErrForbidden, each with the reason in the body, and only an admitted
// request reaches the handler.
func TestAuthenticate(t *testing.T) {
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++; w.WriteHeader(http.StatusOK) })
	s := &server{cfg: Config{Auth: func(r *http.Request) error {
		switch r.Header.Get("Authorization") {
		case "good":
			return nil
		case "known":
			return fmt.Errorf("%w: user known may not read store counts", ErrForbidden)
		default:
			return errors.New("no credentials")
		}
	}}}
	h := s.authenticate(next)
	for _, tc := range []struct {
		auth   string
		status int
		body   string
	}{
		{"good", http.StatusOK, ""},
		{"", http.StatusUnauthorized, "query: unauthorized: no credentials"},
		{"known", http.StatusForbidden, "query: forbidden: user known may not read store counts"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/stores/counts/keys/a", nil)
		req.Header.Set("Authorization", tc.auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, tc.status, rec.Code, tc.auth)
		if tc.body != "" {
			var e apiError
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			require.Equal(t, tc.body, e.Error)
		}
	}
	require.Equal(t, 1, reached, "only the admitted request reaches the handler")

	none := &server{}
	rec := httptest.NewRecorder()
	none.authenticate(next).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, 2, reached, "no hook: every request is served")
}

// Owners are reached by the scheme they advertise; an instance serving
// TLS refuses to forward over plain HTTP.
func TestOwnerURL(t *testing.T) {
	plain, secure := &server{}, &server{cfg: Config{TLS: true}}
	u, err := plain.ownerURL("10.0.0.1:8080")
	require.NoError(t, err)
	require.Equal(t, "http://10.0.0.1:8080", u)
	u, err = secure.ownerURL("https://10.0.0.1:8443")
	require.NoError(t, err)
	require.Equal(t, "https://10.0.0.1:8443", u)
	_, err = secure.ownerURL("10.0.0.1:8080")
	require.ErrorContains(t, err, "advertises plain HTTP (10.0.0.1:8080) and this instance forwards over TLS only")
}
