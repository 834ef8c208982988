package registry

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/serde"
)

var _ serde.SchemaResolver = (*Client)(nil)

// Client is a [serde.SchemaResolver] backed by a Confluent-compatible Schema
// Registry, with caches and bounded retries; see the package documentation.
// It is safe for concurrent use. Concurrent first calls for the same id or
// subject may each send a request; the answers are the same.
type Client struct {
	sr  *sr.Client
	cfg config

	mu      sync.RWMutex
	schemas map[int32]string        // id → schema text
	ids     map[subjectSchema]int32 // (subject, schema) → id
}

type subjectSchema struct{ subject, schema string }

// SubjectSchema is one version of a subject, as [Client.SubjectVersion]
// returns it.
type SubjectSchema struct {
	Subject string
	Version int
	ID      int32
	Schema  string // the schema text as the registry returns it
}

// New returns a client for the registry at url: its base URL
// ("http://localhost:8081", "https://host/apis/ccompat/v7" for Apicurio), or
// several separated by commas, which each request tries in order while the
// earlier ones give no response. A URL without a scheme gets "http://". New
// sends no request. An empty url or invalid options are an error wrapping
// ErrConfig, every problem reported at once.
func New(url string, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	var urls []string
	for u := range strings.SplitSeq(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	err := cfg.validate()
	if len(urls) == 0 {
		err = errors.Join(fmt.Errorf("%w: no registry URL", ErrConfig), err)
	}
	if err != nil {
		return nil, err
	}

	srOpts := []sr.ClientOpt{sr.URLs(urls...), sr.UserAgent(cfg.userAgent)}
	if cfg.httpClient != nil {
		hc := *cfg.httpClient // sr sets the TLS configuration on the client it gets
		srOpts = append(srOpts, sr.HTTPClient(&hc))
	} else {
		srOpts = append(srOpts, sr.HTTPClient(&http.Client{Timeout: DefaultRequestTimeout}))
	}
	if cfg.tls != nil {
		srOpts = append(srOpts, sr.DialTLSConfig(cfg.tls))
	}
	if cfg.basicAuth != nil {
		srOpts = append(srOpts, sr.BasicAuth(cfg.basicAuth[0], cfg.basicAuth[1]))
	}
	cl, err := sr.NewClient(srOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Client{
		sr:      cl,
		cfg:     cfg,
		schemas: make(map[int32]string),
		ids:     make(map[subjectSchema]int32),
	}, nil
}

// SR returns the franz-go client underneath, for registry operations this
// package does not wrap: compatibility levels, modes, deletions, listings.
// Its calls share the client's URLs, authentication, TLS and HTTP client, but
// are neither cached nor retried.
func (c *Client) SR() *sr.Client { return c.sr }

// SchemaByID implements [serde.SchemaResolver]: SchemaByIDContext bounded by
// the client's timeout (WithTimeout).
func (c *Client) SchemaByID(id int32) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout)
	defer cancel()
	return c.SchemaByIDContext(ctx, id)
}

// SchemaByIDContext returns the text of the schema with id (GET
// /schemas/ids/{id}), from the cache if the client has seen id before. An
// unknown id is an [*Error] matching serde.ErrSchemaNotFound.
func (c *Client) SchemaByIDContext(ctx context.Context, id int32) (string, error) {
	c.mu.RLock()
	s, ok := c.schemas[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	var got sr.Schema
	err := c.retry(ctx, &Error{Op: opGetSchema, ID: id}, func(ctx context.Context) (err error) {
		got, err = c.sr.SchemaByID(ctx, int(id))
		return err
	})
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.schemas[id]; ok {
		return prev, nil
	}
	c.schemas[id] = got.Schema
	return got.Schema, nil
}

// IDForSchema implements [serde.SchemaResolver]: IDForSchemaContext bounded
// by the client's timeout (WithTimeout).
func (c *Client) IDForSchema(subject, schema string) (int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.timeout)
	defer cancel()
	return c.IDForSchemaContext(ctx, subject, schema)
}

// IDForSchemaContext returns the id of schema under subject, from the cache
// if the client has asked before: it registers the schema (the default), only
// looks it up (WithAutoRegister(false)), or checks that it is the pinned
// version (WithSubjectVersion). Errors are [*Error] values: a schema or
// subject the registry does not have matches serde.ErrSchemaNotFound, a
// schema it refuses as incompatible matches ErrIncompatible; with a pinned
// version, another version is an error wrapping ErrNotPinnedVersion. An empty
// subject or schema is an error.
func (c *Client) IDForSchemaContext(ctx context.Context, subject, schema string) (int32, error) {
	if subject == "" {
		return 0, errors.New("registry: empty subject")
	}
	if schema == "" {
		return 0, errors.New("registry: empty schema")
	}
	key := subjectSchema{subject, schema}
	c.mu.RLock()
	id, ok := c.ids[key]
	c.mu.RUnlock()
	if ok {
		return id, nil
	}

	var (
		err    error
		pinned SubjectSchema
	)
	switch {
	case c.cfg.pinned:
		id, err = c.lookup(ctx, subject, schema)
		if err == nil {
			pinned, err = c.SubjectVersion(ctx, subject, c.cfg.version)
		}
		if err == nil && pinned.ID != id {
			err = fmt.Errorf("%w: subject %q has the schema as id %d, but its version %s is id %d",
				ErrNotPinnedVersion, subject, id, versionName(c.cfg.version), pinned.ID)
		}
	case c.cfg.autoRegister:
		err = c.retry(ctx, &Error{Op: opRegister, Subject: subject}, func(ctx context.Context) (err error) {
			var n int
			n, err = c.sr.RegisterSchema(ctx, subject, sr.Schema{Schema: schema}, -1, -1)
			id = int32(n)
			if err == nil && (n <= 0 || n > math.MaxInt32) {
				err = fmt.Errorf("the registry answered id %d", n)
			}
			return err
		})
	default:
		id, err = c.lookup(ctx, subject, schema)
	}
	if err != nil {
		return 0, err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[key] = id
	if _, ok := c.schemas[id]; !ok {
		c.schemas[id] = schema // the registry says id is this schema
	}
	return id, nil
}

// lookup returns the id of schema under subject without registering it.
func (c *Client) lookup(ctx context.Context, subject, schema string) (id int32, err error) {
	err = c.retry(ctx, &Error{Op: opLookup, Subject: subject}, func(ctx context.Context) error {
		ss, err := c.sr.LookupSchema(ctx, subject, sr.Schema{Schema: schema})
		id = int32(ss.ID)
		return err
	})
	return id, err
}

// SubjectVersion returns version of subject (1 or more, or LatestVersion):
// its id and schema text (GET /subjects/{subject}/versions/{version}). It is
// not cached, since the latest version changes, but the schema it returns is
// cached by id. A subject or version the registry does not have is an
// [*Error] matching serde.ErrSchemaNotFound.
func (c *Client) SubjectVersion(ctx context.Context, subject string, version int) (SubjectSchema, error) {
	if version < 1 && version != LatestVersion {
		return SubjectSchema{}, fmt.Errorf("registry: subject %q: version %d: want 1 or more, or LatestVersion", subject, version)
	}
	var ss sr.SubjectSchema
	err := c.retry(ctx, &Error{Op: opGetVersion, Subject: subject, Version: version}, func(ctx context.Context) (err error) {
		ss, err = c.sr.SchemaByVersion(ctx, subject, version)
		return err
	})
	if err != nil {
		return SubjectSchema{}, err
	}
	out := SubjectSchema{Subject: subject, Version: ss.Version, ID: int32(ss.ID), Schema: ss.Schema.Schema}
	c.mu.Lock()
	if _, ok := c.schemas[out.ID]; !ok {
		c.schemas[out.ID] = out.Schema
	}
	c.mu.Unlock()
	return out, nil
}

func versionName(v int) string {
	if v == LatestVersion {
		return "latest"
	}
	return fmt.Sprint(v)
}

// retry calls op until it succeeds, fails with an error a retry cannot cure,
// or has been retried c.cfg.retries times, waiting a growing backoff between
// calls. It returns nil or e filled in with the last error.
func (c *Client) retry(ctx context.Context, e *Error, op func(context.Context) error) error {
	wait := c.cfg.minBackoff
	for {
		e.Attempts++
		err := op(ctx)
		if err == nil {
			return nil
		}
		e.Err, e.Status = err, 0
		var re *sr.ResponseError
		if errors.As(err, &re) {
			e.Status = re.StatusCode
		}
		if e.Attempts > c.cfg.retries || !retriable(ctx, err) {
			return e
		}
		d := wait - time.Duration(rand.Int64N(int64(wait)/4+1))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			e.Err = fmt.Errorf("%w (%w while waiting to retry)", err, context.Cause(ctx))
			return e
		case <-t.C:
		}
		wait = min(2*wait, c.cfg.maxBackoff)
	}
}

// retriable reports whether err, from a request made with ctx, may go away
// if the request is sent again: a 5xx status, or no response while ctx is
// still live (a refused or reset connection, a request timeout). 4xx
// statuses, certificates that do not verify, undecodable answers and ctx's
// own end are final.
func retriable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 500
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return false // the same certificate again
	}
	var ue *url.Error
	return errors.As(err, &ue)
}
