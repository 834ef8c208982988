package registry

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// LatestVersion, given to [WithSubjectVersion] or [Client.SubjectVersion],
// names the newest version of a subject.
const LatestVersion = -1

// Defaults of the options below.
const (
	// DefaultRetries is WithRetries' default: 4 attempts in all.
	DefaultRetries = 3
	// DefaultMinBackoff is WithBackoff's default wait before the first retry.
	DefaultMinBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff is WithBackoff's default longest wait.
	DefaultMaxBackoff = 2 * time.Second
	// DefaultTimeout is WithTimeout's default bound of one SchemaByID or
	// IDForSchema call, retries included.
	DefaultTimeout = 30 * time.Second
	// DefaultRequestTimeout bounds one HTTP request of the default HTTP
	// client (WithHTTPClient replaces it).
	DefaultRequestTimeout = 5 * time.Second
)

// Option configures [New]. Options are applied in order; a later one
// overrides an earlier one of the same kind.
type Option func(*config)

type config struct {
	basicAuth    *[2]string
	tls          *tls.Config
	httpClient   *http.Client
	userAgent    string
	autoRegister bool
	version      int // 0: not pinned; LatestVersion or ≥1: pinned
	pinned       bool
	retries      int
	minBackoff   time.Duration
	maxBackoff   time.Duration
	timeout      time.Duration
}

func defaultConfig() config {
	return config{
		userAgent:    "weir",
		autoRegister: true,
		retries:      DefaultRetries,
		minBackoff:   DefaultMinBackoff,
		maxBackoff:   DefaultMaxBackoff,
		timeout:      DefaultTimeout,
	}
}

// validate reports every problem with c at once, each wrapping ErrConfig.
func (c *config) validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}
	if c.basicAuth != nil && c.basicAuth[0] == "" {
		bad("basic auth with an empty user")
	}
	if c.pinned && c.version < 1 && c.version != LatestVersion {
		bad("subject version %d: want 1 or more, or LatestVersion", c.version)
	}
	if c.retries < 0 {
		bad("retries %d: want 0 or more", c.retries)
	}
	if c.minBackoff <= 0 || c.maxBackoff < c.minBackoff {
		bad("backoff %v to %v: want 0 < min <= max", c.minBackoff, c.maxBackoff)
	}
	if c.timeout <= 0 {
		bad("timeout %v: want more than 0", c.timeout)
	}
	return errors.Join(errs...)
}

// WithBasicAuth sends user and password with every request (HTTP basic
// authentication, Confluent's basic.auth.user.info). Default: no
// Authorization header. An empty user is an error; send credentials over
// https only.
func WithBasicAuth(user, password string) Option {
	return func(c *config) { c.basicAuth = &[2]string{user, password} }
}

// WithTLS sets the TLS configuration for https URLs: a private CA in
// RootCAs, a client certificate in Certificates, ServerName. Default: Go's
// defaults (the system's roots). With WithHTTPClient, that client's Transport
// must be nil or an *http.Transport without a custom dialer; the client given
// is not modified (a copy gets the TLS configuration).
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithHTTPClient sends the requests through client: its Transport (a proxy,
// instrumentation) and its Timeout, which bounds each request. Default: a
// client with Go's default transport and a DefaultRequestTimeout (5 s) timeout
// per request. A nil client keeps the default.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.httpClient = client }
}

// WithUserAgent sets the User-Agent header; default "weir".
func WithUserAgent(ua string) Option {
	return func(c *config) { c.userAgent = ua }
}

// WithAutoRegister sets whether IDForSchema registers a schema the subject
// does not have yet (true, the default, like Confluent's
// auto.register.schemas) or only looks it up and fails with an error wrapping
// serde.ErrSchemaNotFound (false).
func WithAutoRegister(on bool) Option {
	return func(c *config) { c.autoRegister = on }
}

// WithSubjectVersion pins writers to one version of each subject: version
// (1 or more) or LatestVersion. IDForSchema then registers nothing; it looks
// the schema up under the subject and returns its id if the subject's pinned
// version is that schema, and otherwise fails with an error wrapping
// ErrNotPinnedVersion (or serde.ErrSchemaNotFound if the subject does not
// have the schema at all). The registry compares the schemas, normalized as
// it does. The check is made once per subject and schema and cached: a
// version registered after it does not change an id already returned.
// Default: not pinned. Other versions are an error.
func WithSubjectVersion(version int) Option {
	return func(c *config) { c.version, c.pinned = version, true }
}

// WithRetries sets how many times a request that failed with a 5xx status or
// without a response is sent again; 0 sends every request once. Default
// DefaultRetries (3, so at most 4 attempts). Negative is an error.
func WithRetries(n int) Option {
	return func(c *config) { c.retries = n }
}

// WithBackoff sets the wait before the first retry (first) and the most any
// wait grows to (most): each retry doubles it, less a random part of up to a
// quarter, so that many clients do not retry in step. Defaults
// DefaultMinBackoff (100 ms) and DefaultMaxBackoff (2 s). first must be more
// than 0 and most at least first.
func WithBackoff(first, most time.Duration) Option {
	return func(c *config) { c.minBackoff, c.maxBackoff = first, most }
}

// WithTimeout bounds each call of SchemaByID and IDForSchema, all its
// requests and retries included, since serdes call them without a context.
// Default DefaultTimeout (30 s); must be more than 0. The Context variants
// are bounded by their context instead.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}
