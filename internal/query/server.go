// Package query serves an App's HTTP endpoints: interactive queries of its
// state stores (forwarded to the instance that owns the key), health,
// readiness, Prometheus metrics and progress reports.
//
// Usage (the root App wires it):
//
//	h, err := query.NewHandler(query.Config{Runtime: rt, Members: members, Self: addr,
//		Metrics: m.Handler(), Progress: ring.Snapshot})
//	srv := &http.Server{Handler: h}
//	go srv.Serve(listener)
//
// Queries read committed state only: the Badger rows a task's epochs or
// batches reach after their Kafka commit, never the staged writes of one
// that may still abort (tasks.QueryStore).
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// ForwardedHeader marks a request one instance forwarded to another: the
// receiver answers from its own state or refuses with 421, never forwards
// again.
const ForwardedHeader = "X-Weir-Forwarded"

// DefaultLimit bounds the entries of a range reply unless limit says
// otherwise.
const DefaultLimit = 1000

// Config configures the handler.
type Config struct {
	// Runtime is the run's runtime, read only; required.
	Runtime tasks.QueryView
	// Members reads the consumer group's members; required.
	Members Members
	// Self is the address this instance advertises; required.
	Self string
	// Metrics serves /metrics (optional).
	Metrics http.Handler
	// Progress returns the last progress reports for /progress (optional).
	Progress func() any
	// Client forwards requests (default: a client with a 10 s timeout).
	Client *http.Client
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Health, if set, answers /healthz and /readyz: the application's
	// state (see Health). Without it /healthz is always 200 and /readyz
	// 200 once the topics are ready and no task restores.
	Health func() Health
	// Auth, if set, admits or refuses every request before it is served
	// (see ErrForbidden); forwarded requests carry the original's
	// Authorization header.
	Auth func(*http.Request) error
	// TLS: the instance serves HTTPS (Self has the https:// prefix) and
	// forwards over HTTPS only; Client must trust the instances'
	// certificates.
	TLS bool
	// Status, if set, serves the status page at / and its reports under
	// /status/ (internal/status), behind the same Auth.
	Status http.Handler
}

// Health is the application's state as /healthz and /readyz report it.
type Health struct {
	// State names the state ("running", "retrying", ...).
	State string `json:"state"`
	// Ready: /readyz answers 200, else 503.
	Ready bool `json:"ready"`
	// Healthy: /healthz answers 200, else 503.
	Healthy bool `json:"healthy"`
	// Reason says why the application is not ready, or not healthy.
	Reason string `json:"reason,omitempty"`
	// Error is the last error of a retrying or failed application.
	Error string `json:"error,omitempty"`
	// Since is when the application entered the state (RFC 3339).
	Since string `json:"since,omitempty"`
	// RestoringTasks counts the tasks restoring their stores.
	RestoringTasks int64 `json:"restoringTasks,omitempty"`
}

type server struct {
	cfg    Config
	rt     tasks.QueryView
	owners *owners
}

// NewHandler returns the HTTP handler of an instance.
func NewHandler(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, errors.New("query: no runtime")
	case cfg.Members == nil:
		return nil, errors.New("query: no group members reader")
	case cfg.Self == "":
		return nil, errors.New("query: no advertised address")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	rt := cfg.Runtime
	s := &server{cfg: cfg, rt: rt, owners: &owners{members: cfg.Members, subOf: func(topic string) (int, bool) {
		p := rt.Plan()
		if p == nil {
			return 0, false
		}
		sub, ok := p.Subtopology[topic]
		return sub, ok
	}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.ready)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("GET /progress", func(w http.ResponseWriter, _ *http.Request) {
		var p any = []any{}
		if cfg.Progress != nil {
			p = cfg.Progress()
		}
		writeJSON(w, http.StatusOK, p)
	})
	mux.HandleFunc("GET /stores/{store}/keys/{key}", s.counted(s.key))
	mux.HandleFunc("GET /stores/{store}/keys", s.counted(s.rangeAll))
	mux.HandleFunc("GET /stores/{store}/partitions/{partition}/keys", s.counted(s.rangePartition))
	if cfg.Status != nil {
		mux.Handle("GET /{$}", cfg.Status)
		mux.Handle("GET /status/", cfg.Status)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiError{Error: "no such endpoint: " + r.Method + " " + r.URL.Path})
	})
	return s.authenticate(mux), nil
}

// apiError is the body of every error reply.
type apiError struct {
	Error     string `json:"error"`
	Store     string `json:"store,omitempty"`
	Key       string `json:"key,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	Owner     *Owner `json:"owner,omitempty"`
	// Cause names why a 503 could not answer (Cause* constants).
	Cause string `json:"cause,omitempty"`
	// OwnerMapAgeMs: the owner was looked up in a map that is not
	// current, this old (OwnerMapAgeHeader).
	OwnerMapAgeMs *int64 `json:"ownerMapAgeMs,omitempty"`
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Health == nil {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	h := s.cfg.Health()
	body := map[string]any{"status": "ok", "state": h.State, "since": h.Since}
	status := http.StatusOK
	if !h.Healthy {
		body["status"], status = "failed", http.StatusServiceUnavailable
		body["error"] = h.Error
	}
	writeJSON(w, status, body)
}

func (s *server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Health != nil {
		h := s.cfg.Health()
		status := http.StatusOK
		if !h.Ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, h)
		return
	}
	switch {
	case !s.rt.Prepared():
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "starting: topics not ready"})
	case s.rt.Restoring() > 0:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": "restoring state stores", "restoringTasks": s.rt.Restoring()})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	}
}

// key answers GET /stores/{store}/keys/{key}[?from=&to=].
func (s *server) key(w http.ResponseWriter, r *http.Request) {
	name, text := r.PathValue("store"), r.PathValue("key")
	info, ok := s.store(w, name)
	if !ok {
		return
	}
	kb, err := info.Codec.ParseKey(text)
	if err != nil {
		writeError(w, http.StatusBadRequest, apiError{Error: err.Error(), Store: name, Key: text})
		return
	}
	from, err1 := parseTime(r.URL.Query().Get("from"), minTime)
	to, err2 := parseTime(r.URL.Query().Get("to"), maxTime)
	var asOf *time.Time
	var err3 error
	if t := r.URL.Query().Get("asOf"); t != "" {
		var at time.Time
		at, err3 = parseTime(t, time.Time{})
		asOf = &at
		if err3 == nil && !info.Codec.Versioned {
			err3 = fmt.Errorf("store %q is not versioned: asOf reads versioned stores", name)
		}
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		writeError(w, http.StatusBadRequest, apiError{Error: "query: " + err.Error(), Store: name, Key: text})
		return
	}
	p, err := kafka.PartitionForKey(kb, info.Partitions)
	if err != nil {
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error(), Store: name, Key: text})
		return
	}
	st, c, ok := s.open(w, r, info, p, apiError{Store: name, Key: text, Partition: &p})
	if !ok {
		return
	}
	defer st.Close()
	var (
		v                  any
		ws                 []Window
		validFrom, validTo *int64
	)
	if info.Codec.Versioned {
		v, validFrom, validTo, err = readVersioned(st, info.Codec, kb, asOf)
	} else {
		v, ws, err = readKey(st, info.Codec, kb, from, to)
	}
	switch {
	case errors.Is(err, errNotFound):
		writeError(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("query: store %q has no key %q", name, text), Store: name, Key: text, Partition: &p})
	case err != nil:
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error(), Store: name, Key: text, Partition: &p})
	default:
		writeJSON(w, http.StatusOK, KeyReply{Store: name, Key: text, Partition: p, Value: v, Windows: ws,
			ValidFromMs: validFrom, ValidToMs: validTo, ServedBy: s.cfg.Self, Role: c.Role, Lag: c.Lag,
			OwnerMapAgeMs: forwardedOwnerMapAge(r)})
	}
}

// rangePartition answers GET /stores/{store}/partitions/{p}/keys.
func (s *server) rangePartition(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("store")
	info, ok := s.store(w, name)
	if !ok {
		return
	}
	n, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || n < 0 || int32(n) >= info.Partitions {
		writeError(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("query: partition %q is not in [0, %d)", r.PathValue("partition"), info.Partitions), Store: name})
		return
	}
	s.servePartition(w, r, info, int32(n))
}

// servePartition answers a range query of one partition: from its rows
// here, or forwarded to its owner.
func (s *server) servePartition(w http.ResponseWriter, r *http.Request, info tasks.StoreInfo, p int32) {
	name := info.Spec.Name
	from, to, limit, bad := s.rangeArgs(w, r, info)
	if bad {
		return
	}
	st, c, ok := s.open(w, r, info, p, apiError{Store: name, Partition: &p})
	if !ok {
		return
	}
	defer st.Close()
	entries, more, err := readRange(st, info.Codec, p, from, to, limit)
	switch {
	case errors.Is(err, errRangeKind), errors.Is(err, errRangeVersioned):
		writeError(w, http.StatusBadRequest, apiError{Error: err.Error(), Store: name})
	case err != nil:
		writeError(w, http.StatusInternalServerError, apiError{Error: err.Error(), Store: name, Partition: &p})
	default:
		writeJSON(w, http.StatusOK, RangeReply{Store: name, Entries: entries, Truncated: more, Lag: c.Lag,
			OwnerMapAgeMs: forwardedOwnerMapAge(r)})
	}
}

// rangeAll answers GET /stores/{store}/keys[?from=&to=&limit=]: the
// ranges of every partition, each from its owner, ordered by partition,
// then key.
func (s *server) rangeAll(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("store")
	info, ok := s.store(w, name)
	if !ok {
		return
	}
	_, _, limit, bad := s.rangeArgs(w, r, info)
	if bad {
		return
	}
	out := RangeReply{Store: name, Entries: []Entry{}}
	for p := range info.Partitions {
		u := *r.URL
		u.Path = fmt.Sprintf("/stores/%s/partitions/%d/keys", name, p)
		q := u.Query()
		q.Set("limit", strconv.Itoa(limit-len(out.Entries)))
		u.RawQuery = q.Encode()
		req := r.Clone(r.Context())
		req.URL, req.RequestURI = &u, u.RequestURI()
		rec := &recorder{header: http.Header{}}
		s.servePartition(rec, req, info, p)
		if rec.status != http.StatusOK {
			copyReply(w, rec.status, rec.header.Get("Content-Type"), rec.body)
			return
		}
		var part RangeReply
		if err := json.Unmarshal(rec.body, &part); err != nil {
			writeError(w, http.StatusBadGateway, apiError{Error: "query: partition reply: " + err.Error(), Store: name})
			return
		}
		out.Entries = append(out.Entries, part.Entries...)
		out.Lag = max(out.Lag, part.Lag)
		out.OwnerMapAgeMs = maxAge(out.OwnerMapAgeMs, maxAge(part.OwnerMapAgeMs, parseOwnerMapAge(rec.header.Get(OwnerMapAgeHeader))))
		if part.Truncated || len(out.Entries) >= limit {
			out.Truncated = part.Truncated || p < info.Partitions-1
			break
		}
	}
	if out.OwnerMapAgeMs != nil {
		w.Header().Set(OwnerMapAgeHeader, strconv.FormatInt(*out.OwnerMapAgeMs, 10))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) rangeArgs(w http.ResponseWriter, r *http.Request, info tasks.StoreInfo) (from, to []byte, limit int, bad bool) {
	q := r.URL.Query()
	fail := func(msg string) ([]byte, []byte, int, bool) {
		writeError(w, http.StatusBadRequest, apiError{Error: "query: " + msg, Store: info.Spec.Name})
		return nil, nil, 0, true
	}
	var err error
	if t := q.Get("from"); t != "" {
		if from, err = info.Codec.ParseKey(t); err != nil {
			return fail(err.Error())
		}
	}
	if t := q.Get("to"); t != "" {
		if to, err = info.Codec.ParseKey(t); err != nil {
			return fail(err.Error())
		}
	}
	limit = DefaultLimit
	if t := q.Get("limit"); t != "" {
		if limit, err = strconv.Atoi(t); err != nil || limit < 1 {
			return fail(fmt.Sprintf("limit %q is not a positive integer", t))
		}
	}
	return from, to, limit, false
}

// store looks a store up, answering 404 or 503 itself.
func (s *server) store(w http.ResponseWriter, name string) (tasks.StoreInfo, bool) {
	info, err := s.rt.Store(name)
	if err != nil {
		writeError(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("query: no queryable store %q", name), Store: name})
		return info, false
	}
	if info.Partitions == 0 {
		writeError(w, http.StatusServiceUnavailable, apiError{Error: "query: starting: topics not ready", Store: name, Cause: CauseStarting})
		return info, false
	}
	return info, true
}

// forward sends r to the instance at addr and returns its reply; old, if
// the owner map that chose addr is stale, tells the instance its age.
func (s *server) forward(ctx context.Context, addr string, r *http.Request, old *staleMap) (int, string, []byte, error) {
	base, err := s.ownerURL(addr)
	if err != nil {
		return 0, "", nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+r.URL.RequestURI(), nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set(ForwardedHeader, s.cfg.Self)
	if old != nil {
		req.Header.Set(OwnerMapAgeHeader, strconv.FormatInt(old.Age.Milliseconds(), 10))
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, "", nil, err
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, nil
}

func copyReply(w http.ResponseWriter, status int, ctype string, body []byte) {
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(apiError{Error: "query: encode reply: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, e apiError) { writeJSON(w, status, e) }

// recorder collects a handler's reply (rangeAll's per-partition calls).
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(s int)   { r.status = s }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body = append(r.body, b...)
	return len(b), nil
}
