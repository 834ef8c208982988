package weir

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/query"
	"github.com/weirstream/weir/internal/status"
)

// Metrics returns the App's Prometheus registry: the metrics /metrics
// serves, for an application that serves them itself, or to add its own.
// Each App has its own registry.
func (a *App) Metrics() *prometheus.Registry { return a.metrics.Registry() }

// HTTPAddr returns the address the HTTP endpoints listen on (host:port;
// served over HTTPS with WithHTTPTLS), "" when WithHTTP is not set or Run
// is not serving.
func (a *App) HTTPAddr() string {
	if p := a.httpAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// validateHTTP reports the problems of the HTTP options (see validate).
func (c *config) validateHTTP(bad func(format string, a ...any)) {
	if c.httpOn {
		if _, _, err := net.SplitHostPort(c.httpAddr); err != nil {
			bad("WithHTTP: %q is not host:port: %v", c.httpAddr, err)
		}
	}
	if c.httpAdvertise != "" {
		scheme, hostport := splitScheme(c.httpAdvertise)
		if host, port, err := net.SplitHostPort(hostport); err != nil {
			bad("WithAdvertisedHTTP: %q is not host:port: %v", c.httpAdvertise, err)
		} else if host == "" || port == "" {
			bad("WithAdvertisedHTTP: %q lacks a host or a port", c.httpAdvertise)
		}
		switch {
		case scheme == "http" && c.httpTLS != nil:
			bad("WithAdvertisedHTTP: %q is plain HTTP but the instance serves TLS (WithHTTPTLS): advertise https:// or host:port", c.httpAdvertise)
		case scheme == "https" && c.httpTLS == nil:
			bad("WithAdvertisedHTTP: %q is https:// but the instance serves plain HTTP (no WithHTTPTLS)", c.httpAdvertise)
		}
	}
	if c.httpTLSSet {
		switch t := c.httpTLS; {
		case t == nil:
			bad("WithHTTPTLS: nil *tls.Config")
		case !c.httpOn:
			bad("WithHTTPTLS: set without WithHTTP (there is no HTTP server to serve over TLS)")
		default:
			if len(t.Certificates) == 0 && t.GetCertificate == nil && t.GetConfigForClient == nil {
				bad("WithHTTPTLS: no server certificate (set Certificates or GetCertificate)")
			}
			verifies := t.ClientAuth == tls.VerifyClientCertIfGiven || t.ClientAuth == tls.RequireAndVerifyClientCert
			if verifies && t.ClientCAs == nil {
				bad("WithHTTPTLS: ClientAuth %v verifies client certificates but ClientCAs is nil (set the CA of the clients' certificates)", t.ClientAuth)
			}
			if (t.ClientAuth == tls.RequestClientCert || t.ClientAuth == tls.RequireAnyClientCert) && t.VerifyPeerCertificate == nil {
				bad("WithHTTPTLS: ClientAuth %v accepts any client certificate unverified: use RequireAndVerifyClientCert with ClientCAs, or set VerifyPeerCertificate", t.ClientAuth)
			}
			if t.ClientAuth == tls.RequireAndVerifyClientCert && len(t.Certificates) == 0 && t.GetClientCertificate == nil {
				bad("WithHTTPTLS: client certificates are required but forwarding between instances has none to present (set Certificates or GetClientCertificate)")
			}
		}
	}
	if c.httpAuthSet {
		switch {
		case c.httpAuth == nil:
			bad("WithHTTPAuth: nil function")
		case !c.httpOn:
			bad("WithHTTPAuth: set without WithHTTP (there is no HTTP server to authenticate requests to)")
		}
	}
}

// splitScheme splits an advertised address into its scheme ("http",
// "https", or "" when it has none) and host:port; another scheme is left in
// host:port, which then fails to parse.
func splitScheme(addr string) (scheme, hostport string) {
	for _, s := range []string{"http", "https"} {
		if rest, ok := strings.CutPrefix(addr, s+"://"); ok {
			return s, rest
		}
	}
	return "", addr
}

// forwardClient is the client an instance forwards queries with: over TLS
// it trusts the configured RootCAs and presents the configured
// certificates.
func (a *App) forwardClient() *http.Client {
	c := &http.Client{Timeout: 10 * time.Second}
	if a.cfg.httpTLS == nil {
		return c
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg := a.cfg.httpTLS.Clone()
	// A server configuration used as a client's: the transport offers its
	// own protocols, and the host it dials is the name to verify.
	cfg.NextProtos, cfg.ServerName = nil, ""
	tr.TLSClientConfig = cfg
	c.Transport = tr
	return c
}

// listenHTTP binds the listener and works out the advertised address.
func (a *App) listenHTTP() (net.Listener, string, error) {
	host, port, err := net.SplitHostPort(a.cfg.httpAddr)
	if err != nil {
		return nil, "", fmt.Errorf("http address %q: %w", a.cfg.httpAddr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, "", fmt.Errorf("http: %w", err)
	}
	_, adv := splitScheme(a.cfg.httpAdvertise)
	if adv == "" {
		tcp := ln.Addr().(*net.TCPAddr)
		adv = ln.Addr().String()
		if tcp.IP.IsUnspecified() {
			name, err := os.Hostname()
			if err != nil {
				_ = ln.Close()
				return nil, "", fmt.Errorf("http: advertised address: %w (set WithAdvertisedHTTP)", err)
			}
			adv = net.JoinHostPort(name, fmt.Sprint(tcp.Port))
		}
	}
	if a.cfg.httpTLS != nil {
		adv = query.HTTPS + adv
	}
	return ln, adv, nil
}

// serveHTTP starts the HTTP endpoints of a run, if configured; stop shuts
// them down and waits.
func (a *App) serveHTTP(rt *tasks.Runtime) (stop func(), err error) {
	if !a.cfg.httpOn {
		return func() {}, nil
	}
	ln, adv, err := a.listenHTTP()
	if err != nil {
		return nil, err
	}
	rt.SetMemberData([]byte(adv))
	forward := a.forwardClient()
	page, err := a.statusPage(rt, adv, forward)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	h, err := query.NewHandler(query.Config{
		Runtime: rt, Members: rt.GroupMembers, Self: adv, Metrics: a.metrics.Handler(),
		Progress: a.progress.Snapshot, Logger: a.cfg.logger,
		Health: func() query.Health { return a.health(rt) },
		Auth:   a.cfg.httpAuth, TLS: a.cfg.httpTLS != nil, Client: forward,
		Status: page.Handler(),
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	sampling, stopSampling := context.WithCancel(context.Background())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serve := func() error { return srv.Serve(ln) }
	if a.cfg.httpTLS != nil {
		srv.TLSConfig = a.cfg.httpTLS.Clone()
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	actual := ln.Addr().String()
	a.httpAddr.Store(&actual)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.cfg.logger.Error("weir: http server", "err", err)
		}
	})
	wg.Go(func() { _ = page.Run(sampling) })
	a.cfg.logger.Info("weir: serving http", "addr", actual, "advertised", adv, "tls", a.cfg.httpTLS != nil, "auth", a.cfg.httpAuth != nil)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		stopSampling()
		wg.Wait()
		forward.CloseIdleConnections()
		a.httpAddr.Store(nil)
	}, nil
}

// health is the App's state as /healthz and /readyz report it: ready only
// while Running, healthy unless Failed.
func (a *App) health(rt *tasks.Runtime) query.Health {
	st := a.State()
	h := query.Health{
		State: st.State.String(), Ready: st.Ready(), Healthy: st.Healthy(),
		Since: st.Since.UTC().Format(time.RFC3339Nano), RestoringTasks: rt.Restoring(),
	}
	if st.Err != nil {
		h.Error = st.Err.Error()
	}
	switch st.State {
	case Starting:
		h.Reason = "starting: preflight, topics, producer"
	case Rebalancing:
		h.Reason = "joining the consumer group: waiting for partitions"
	case Restoring:
		h.Reason = "restoring state stores"
	case Retrying:
		h.Reason = "the last epoch or batch did not commit; retrying"
		if errors.Is(st.Err, tasks.ErrDiskFull) {
			h.Reason = "disk full: processing paused until the state volume has room"
		}
	case Failed:
		h.Reason = "failed"
	case Stopped:
		h.Reason = "stopped"
	}
	return h
}

// statusEvents is how many state changes and assignments the status page
// lists.
const statusEvents = 100

// statusPage returns the status page of a run (internal/status): the App's
// state and the group, drawn from the metrics, the group coordinator and
// the other instances' own reports.
func (a *App) statusPage(rt *tasks.Runtime, adv string, client *http.Client) (*status.Page, error) {
	kc := a.cfg.kafkaConfig()
	kafkaClient, _ := kafka.ResolveClient(kc.Client) // validated by New
	return status.New(status.Config{
		Gatherer: a.metrics.Registry(), Description: a.topo.Describe(), Self: adv,
		Members: rt.GroupMembers, Events: a.events, Client: client, Logger: a.cfg.logger,
		Info: func() status.Info {
			h := a.health(rt)
			st := a.State()
			return status.Info{
				Application: a.cfg.applicationID, Mode: a.cfg.mode.String(), Guarantee: a.cfg.guarantee.String(),
				Client: string(kafkaClient), State: h.State, Reason: h.Reason, Error: h.Error,
				Since: st.Since.UnixMilli(), Started: a.started.Load(), Version: moduleVersion(),
				RestoringTasks: h.RestoringTasks,
			}
		},
		Stores: func() ([]status.StoreRows, int64, error) {
			stats, disk, err := rt.StoreSizes()
			rows := make([]status.StoreRows, 0, len(stats))
			for _, s := range stats {
				if s.Rows > 0 {
					rows = append(rows, status.StoreRows{Store: s.Store, Partition: s.Partition, Rows: s.Rows})
				}
			}
			return rows, disk, err
		},
	})
}

// moduleVersion is weir's version in the running binary: the module's
// version when weir is a dependency, "(devel)" when built in its checkout.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/weirstream/weir"
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "unknown"
}
