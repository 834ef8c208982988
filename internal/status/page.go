package status

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/kafka"
)

//go:embed assets
var assets embed.FS

// Defaults of Config.
const (
	DefaultInterval = 2 * time.Second
	DefaultWindow   = 15 * time.Minute
	// storeSizesEvery bounds how often the rows of the stores are counted
	// (counting reads every key).
	storeSizesEvery = 30 * time.Second
	// peerTimeout bounds the read of another instance's report.
	peerTimeout = 2 * time.Second
)

// ForwardedHeader marks the page's reads of other instances' reports (the
// query server's header: a receiver never forwards again).
const ForwardedHeader = "X-Weir-Forwarded"

// Info is an instance's application, as the page's header shows it.
type Info struct {
	Application string `json:"application"`
	Mode        string `json:"mode"`
	Guarantee   string `json:"guarantee"`
	// Client is the Kafka client library the instance runs on.
	Client string `json:"client"`
	// State is the App's state (created, starting, rebalancing,
	// restoring, running, retrying, stopped, failed); Reason says why it
	// is not running and Error is its last error.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Since is when it entered State, Started when its run began
	// (milliseconds since the Unix epoch).
	Since   int64 `json:"since"`
	Started int64 `json:"started"`
	// Version is the weir module's version, "(devel)" in a checkout.
	Version string `json:"version"`
	// RestoringTasks counts the tasks restoring their stores.
	RestoringTasks int64 `json:"restoringTasks"`
}

// StoreRows is one store partition's row count on an instance.
type StoreRows struct {
	Store     string `json:"store"`
	Partition int32  `json:"partition"`
	Rows      int64  `json:"rows"`
}

// Local is what one instance reports about itself.
type Local struct {
	Addr string `json:"addr"`
	Info Info   `json:"info"`
	// Samples are the metrics samples newer than the request's since.
	Samples []Sample `json:"samples"`
	// Stores are the store partitions it holds and DiskBytes the bytes
	// its state database holds; counted at most every 30 s.
	Stores    []StoreRows `json:"stores"`
	DiskBytes int64       `json:"diskBytes"`
	Events    []Event     `json:"events"`
}

// Member is one member of the group as the page shows it: what the group
// coordinator says it runs, and its own report.
type Member struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
	Self bool   `json:"self,omitempty"`
	// Assigned are its partitions by topic, as the coordinator reports
	// them (empty while the group rebalances).
	Assigned map[string][]int32 `json:"assigned"`
	// Report is the member's own report; nil with Unreachable saying why
	// it could not be read.
	Report      *Local `json:"report,omitempty"`
	Unreachable string `json:"unreachable,omitempty"`
}

// Gone is an instance the page saw in the group that is no longer in it.
type Gone struct {
	Addr     string `json:"addr"`
	LastSeen int64  `json:"lastSeen"`
}

// Group is the whole group seen from one instance.
type Group struct {
	Self    string   `json:"self"`
	Time    int64    `json:"time"`
	Graph   Graph    `json:"graph"`
	Members []Member `json:"members"`
	Gone    []Gone   `json:"gone"`
	// Error says why the group could not be read (the members are then
	// the last ones read).
	Error string `json:"error,omitempty"`
}

// Config configures a Page.
type Config struct {
	// Gatherer is the App's metrics registry; required.
	Gatherer prometheus.Gatherer
	// Description is topology.Describe's text; required.
	Description string
	// Self is the address the instance advertises to its group; required.
	Self string
	// Info returns the instance's application and state; required.
	Info func() Info
	// Members reads the consumer group; required.
	Members func(ctx context.Context) ([]kafka.GroupMember, error)
	// Stores returns the store partitions' rows and the state database's
	// bytes; optional.
	Stores func() ([]StoreRows, int64, error)
	// Events are the App's last state changes and rebalances; optional.
	Events *Events
	// Client reads the other instances' reports (default: a client with a
	// 2 s timeout).
	Client *http.Client
	// Interval is how often metrics are sampled, Window how long samples
	// are kept (defaults DefaultInterval, DefaultWindow).
	Interval, Window time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Page serves an instance's status page and the reports behind it.
type Page struct {
	cfg    Config
	graph  Graph
	series *Series
	root   fs.FS // the page's files
	files  http.Handler

	mu        sync.Mutex
	stores    []StoreRows
	diskBytes int64
	counted   time.Time
	counting  bool
	seen      map[string]int64 // address → last time (ms) it was a member
	addrs     map[string]string
}

// New validates cfg and returns a Page; Run samples its metrics.
func New(cfg Config) (*Page, error) {
	switch {
	case cfg.Gatherer == nil:
		return nil, errors.New("status: no metrics gatherer")
	case cfg.Info == nil:
		return nil, errors.New("status: no info")
	case cfg.Members == nil:
		return nil, errors.New("status: no group members reader")
	case cfg.Self == "":
		return nil, errors.New("status: no advertised address")
	}
	graph, err := ParseDescription(cfg.Description)
	if err != nil {
		return nil, err
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: peerTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	return &Page{
		cfg: cfg, graph: graph, series: NewSeries(cfg.Window), root: sub,
		files: http.StripPrefix("/status/", http.FileServerFS(sub)),
		seen:  map[string]int64{}, addrs: map[string]string{},
	}, nil
}

// Run samples the metrics every Interval until ctx ends; it returns nil.
func (p *Page) Run(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		p.sample()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (p *Page) sample() {
	s, err := Read(p.cfg.Gatherer, p.cfg.Now())
	if err != nil {
		p.cfg.Logger.Debug("weir: status page: reading metrics", "err", err)
	}
	p.series.Add(s)
}

// Handler serves the page at / and its files and reports under /status/:
// /status/local (this instance) and /status/group (every member), both
// taking since (milliseconds since the Unix epoch) to return only newer
// samples.
func (p *Page) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, p.root, "index.html")
	})
	mux.HandleFunc("GET /status/local", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, p.local(since(r)))
	})
	mux.HandleFunc("GET /status/group", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, p.group(r.Context(), since(r), r.Header.Get("Authorization")))
	})
	mux.Handle("GET /status/", p.files)
	return mux
}

func since(r *http.Request) int64 {
	n, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// local is this instance's report with the samples newer than since.
func (p *Page) local(since int64) Local {
	all := p.series.Samples()
	i, _ := slices.BinarySearchFunc(all, since+1, func(s Sample, t int64) int { return int(s.Time - t) })
	stores, disk := p.storeRows()
	l := Local{Addr: p.cfg.Self, Info: p.cfg.Info(), Samples: all[i:], Stores: stores, DiskBytes: disk,
		Events: p.cfg.Events.List()}
	if l.Stores == nil {
		l.Stores = []StoreRows{}
	}
	if l.Events == nil {
		l.Events = []Event{}
	}
	return l
}

// storeRows returns the last count of the stores' rows, starting a new
// count in the background when it is older than storeSizesEvery.
func (p *Page) storeRows() ([]StoreRows, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Stores != nil && !p.counting && p.cfg.Now().Sub(p.counted) >= storeSizesEvery {
		p.counting = true
		go func() {
			rows, disk, err := p.cfg.Stores()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.counting, p.counted = false, p.cfg.Now()
			if err != nil {
				p.cfg.Logger.Debug("weir: status page: store sizes", "err", err)
				return
			}
			p.stores, p.diskBytes = rows, disk
		}()
	}
	return p.stores, p.diskBytes
}
