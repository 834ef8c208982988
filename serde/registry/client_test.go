package registry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/serde/registry"
)

// Unit tests against httptest servers that answer what each test needs: no
// registry involved. registry_test.go runs against a registry.

const pointV1 = `{"type":"record","name":"Point","fields":[{"name":"x","type":"long"}]}`

// fast makes retries quick for tests.
var fast = registry.WithBackoff(time.Millisecond, 4*time.Millisecond)

// answer returns a handler that answers every request with status and a
// Confluent-style error body (or body, for a 200), counting the requests.
func answer(n *atomic.Int32, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func TestRetriesServerErrorsThenSucceeds(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error_code":50003,"message":"forwarding to the primary failed"}`))
			return
		}
		require.Equal(t, "/schemas/ids/7", r.URL.Path)
		_, _ = w.Write([]byte(`{"schema":` + strconvQuote(pointV1) + `}`))
	}))
	defer srv.Close()

	c, err := registry.New(srv.URL, fast)
	require.NoError(t, err)
	s, err := c.SchemaByID(7)
	require.NoError(t, err)
	require.Equal(t, pointV1, s)
	require.Equal(t, int32(3), n.Load(), "two 503s, then the answer")
}

func TestRetriesAreBounded(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(answer(&n, http.StatusInternalServerError, `{"error_code":50001,"message":"store error"}`))
	defer srv.Close()

	c, err := registry.New(srv.URL, fast, registry.WithRetries(2))
	require.NoError(t, err)
	_, err = c.SchemaByID(7)
	require.EqualError(t, err, "registry: get schema id 7: HTTP 500 Internal Server Error (error code 50001): store error (3 attempts)")
	require.Equal(t, int32(3), n.Load())
	var e *registry.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, registry.Error{Op: "get schema", ID: 7, Status: 500, Attempts: 3, Err: e.Err}, *e)
	require.NotErrorIs(t, err, serde.ErrSchemaNotFound)

	n.Store(0)
	c, err = registry.New(srv.URL, fast, registry.WithRetries(0))
	require.NoError(t, err)
	_, err = c.IDForSchema("points-value", pointV1)
	require.EqualError(t, err, `registry: register schema under subject "points-value": HTTP 500 Internal Server Error (error code 50001): store error`)
	require.Equal(t, int32(1), n.Load(), "no retries")
}

// 4xx statuses are final: one request each, and the error says what and why.
func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		call    func(*registry.Client) error
		wantErr string
		is      error
	}{
		{"unknown id", 404, `{"error_code":40403,"message":"Schema 42 not found"}`,
			func(c *registry.Client) error { _, err := c.SchemaByID(42); return err },
			"registry: get schema id 42: HTTP 404 Not Found (error code 40403): Schema 42 not found", serde.ErrSchemaNotFound},
		{"unknown subject", 404, `{"error_code":40401,"message":"Subject 'clicks-value' not found."}`,
			func(c *registry.Client) error { _, err := c.IDForSchema("clicks-value", pointV1); return err },
			`registry: register schema under subject "clicks-value": HTTP 404 Not Found (error code 40401): Subject 'clicks-value' not found.`, serde.ErrSchemaNotFound},
		{"incompatible", 409, `{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"clicks-value\""}`,
			func(c *registry.Client) error { _, err := c.IDForSchema("clicks-value", pointV1); return err },
			`registry: register schema under subject "clicks-value": HTTP 409 Conflict (error code 409): Schema being registered is incompatible with an earlier schema for subject "clicks-value"`, registry.ErrIncompatible},
		{"invalid schema", 422, `{"error_code":42201,"message":"Invalid schema"}`,
			func(c *registry.Client) error { _, err := c.IDForSchema("clicks-value", pointV1); return err },
			`registry: register schema under subject "clicks-value": HTTP 422 Unprocessable Entity (error code 42201): Invalid schema`, nil},
		{"unauthorized, no body", 401, ``,
			func(c *registry.Client) error {
				_, err := c.SubjectVersion(context.Background(), "clicks-value", registry.LatestVersion)
				return err
			},
			`registry: get version latest of subject "clicks-value": HTTP 401 Unauthorized: no response`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(answer(&n, tc.status, tc.body))
			defer srv.Close()
			c, err := registry.New(srv.URL, fast)
			require.NoError(t, err)
			err = tc.call(c)
			require.EqualError(t, err, tc.wantErr)
			require.Equal(t, int32(1), n.Load())
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			for _, other := range []error{serde.ErrSchemaNotFound, registry.ErrIncompatible} {
				if other != tc.is {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

func TestRetriesNetworkErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now

	c, err := registry.New(addr, fast, registry.WithRetries(2))
	require.NoError(t, err)
	_, err = c.SchemaByID(1)
	var e *registry.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 3, e.Attempts)
	require.Equal(t, 0, e.Status)
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	require.Contains(t, err.Error(), "registry: get schema id 1: ")
	require.Contains(t, err.Error(), "connection refused")
	require.True(t, strings.HasSuffix(err.Error(), "(3 attempts)"), err.Error())
}

// The next URL is tried when one gives no response.
func TestSecondURL(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	var n atomic.Int32
	srv := httptest.NewServer(answer(&n, 200, `{"schema":"\"long\""}`))
	defer srv.Close()
	c, err := registry.New(dead.URL+", "+srv.URL, fast, registry.WithRetries(0))
	require.NoError(t, err)
	s, err := c.SchemaByID(3)
	require.NoError(t, err)
	require.Equal(t, `"long"`, s)
}

// A context that ends during a backoff ends the call at once.
func TestRetryWaitEndsWithContext(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(answer(&n, http.StatusBadGateway, ``))
	defer srv.Close()
	c, err := registry.New(srv.URL, registry.WithBackoff(time.Hour, time.Hour))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.SchemaByIDContext(ctx, 5)
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int32(1), n.Load())
	require.Contains(t, err.Error(), "registry: get schema id 5: HTTP 502 Bad Gateway")

	// WithTimeout bounds the calls without a context the same way.
	c, err = registry.New(srv.URL, registry.WithBackoff(time.Hour, time.Hour), registry.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	_, err = c.IDForSchema("points-value", pointV1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestNewValidates(t *testing.T) {
	_, err := registry.New("", registry.WithRetries(-1), registry.WithBackoff(0, 0),
		registry.WithTimeout(0), registry.WithSubjectVersion(0), registry.WithBasicAuth("", "secret"))
	require.ErrorIs(t, err, registry.ErrConfig)
	for _, want := range []string{
		"registry: invalid configuration: no registry URL",
		"registry: invalid configuration: basic auth with an empty user",
		"registry: invalid configuration: subject version 0: want 1 or more, or LatestVersion",
		"registry: invalid configuration: retries -1: want 0 or more",
		"registry: invalid configuration: backoff 0s to 0s: want 0 < min <= max",
		"registry: invalid configuration: timeout 0s: want more than 0",
	} {
		require.Contains(t, err.Error(), want)
	}
	_, err = registry.New(" , ")
	require.EqualError(t, err, "registry: invalid configuration: no registry URL")

	for _, ok := range [][]registry.Option{
		nil,
		{registry.WithSubjectVersion(registry.LatestVersion)},
		{registry.WithSubjectVersion(3), registry.WithRetries(0), registry.WithBackoff(time.Second, time.Second)},
	} {
		_, err := registry.New("localhost:8081", ok...)
		require.NoError(t, err)
	}
}

func TestEmptySubjectOrSchema(t *testing.T) {
	c, err := registry.New("http://127.0.0.1:1")
	require.NoError(t, err)
	_, err = c.IDForSchema("", pointV1)
	require.EqualError(t, err, "registry: empty subject")
	_, err = c.IDForSchema("s", "")
	require.EqualError(t, err, "registry: empty schema")
	_, err = c.SubjectVersion(context.Background(), "s", 0)
	require.EqualError(t, err, `registry: subject "s": version 0: want 1 or more, or LatestVersion`)
}

func TestBasicAuthHeader(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		user, pass, ok := r.BasicAuth()
		if !ok || user != "weir" || pass != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		require.Equal(t, "weir", r.UserAgent())
		_, _ = w.Write([]byte(`{"id":12}`))
	}))
	defer srv.Close()

	c, err := registry.New(srv.URL, registry.WithBasicAuth("weir", "s3cret"))
	require.NoError(t, err)
	id, err := c.IDForSchema("points-value", pointV1)
	require.NoError(t, err)
	require.Equal(t, int32(12), id)

	c, err = registry.New(srv.URL)
	require.NoError(t, err)
	_, err = c.IDForSchema("other-value", pointV1)
	require.ErrorContains(t, err, "HTTP 401 Unauthorized")
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"schema":"\"string\""}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake that fails on purpose
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	c, err := registry.New(srv.URL, registry.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err)
	s, err := c.SchemaByID(1)
	require.NoError(t, err)
	require.Equal(t, `"string"`, s)

	// With the caller's HTTP client too, which is left as it was.
	hc := &http.Client{Timeout: time.Second}
	c, err = registry.New(srv.URL, registry.WithHTTPClient(hc), registry.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err)
	_, err = c.SchemaByID(1)
	require.NoError(t, err)
	require.Nil(t, hc.Transport)

	// Without the server's CA the certificate is unknown: no retries for that.
	c, err = registry.New(srv.URL, fast)
	require.NoError(t, err)
	_, err = c.SchemaByID(2)
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	var e *registry.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 1, e.Attempts)
}

// countingTransport counts the requests that go through it and keeps the
// last Authorization header.
type countingTransport struct {
	n    atomic.Int32
	auth atomic.Value // string
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	t.auth.Store(r.Header.Get("Authorization"))
	return http.DefaultTransport.RoundTrip(r)
}

// The caches, request by request, against a server that answers anything.
func TestCaches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/subjects/points-value/versions":
			_, _ = w.Write([]byte(`{"id":4}`))
		case r.URL.Path == "/schemas/ids/9":
			_, _ = w.Write([]byte(`{"schema":"\"long\""}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	tr := &countingTransport{}
	c, err := registry.New(srv.URL, registry.WithHTTPClient(&http.Client{Transport: tr}))
	require.NoError(t, err)

	for range 3 {
		id, err := c.IDForSchema("points-value", pointV1)
		require.NoError(t, err)
		require.Equal(t, int32(4), id)
	}
	require.Equal(t, int32(1), tr.n.Load())
	s, err := c.SchemaByID(4) // what was registered as 4
	require.NoError(t, err)
	require.Equal(t, pointV1, s)
	require.Equal(t, int32(1), tr.n.Load())

	for range 3 {
		s, err := c.SchemaByID(9)
		require.NoError(t, err)
		require.Equal(t, `"long"`, s)
	}
	require.Equal(t, int32(2), tr.n.Load())

	// Failures are not cached.
	for range 2 {
		_, err := c.SchemaByID(10)
		require.ErrorIs(t, err, serde.ErrSchemaNotFound)
	}
	require.Equal(t, int32(4), tr.n.Load())
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
