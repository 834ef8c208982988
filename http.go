package weir

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/query"
	"github.com/weirstream/weir/internal/runtime"
)

// Metrics returns the App's Prometheus registry: the metrics /metrics
// serves, for an application that serves them itself, or to add its own.
// Each App has its own registry.
func (a *App) Metrics() *prometheus.Registry { return a.metrics.Registry() }

// HTTPAddr returns the address the HTTP endpoints listen on, "" when
// WithHTTP is not set or Run is not serving.
func (a *App) HTTPAddr() string {
	if p := a.httpAddr.Load(); p != nil {
		return *p
	}
	return ""
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
	adv := a.cfg.httpAdvertise
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
	return ln, adv, nil
}

// serveHTTP starts the HTTP endpoints of a run, if configured; stop shuts
// them down and waits.
func (a *App) serveHTTP(rt *runtime.Runtime) (stop func(), err error) {
	if !a.cfg.httpOn {
		return func() {}, nil
	}
	ln, adv, err := a.listenHTTP()
	if err != nil {
		return nil, err
	}
	rt.SetMemberData([]byte(adv))
	h, err := query.NewHandler(query.Config{
		Runtime: rt, Members: rt.GroupMembers, Self: adv, Metrics: a.metrics.Handler(),
		Progress: a.progress.Snapshot, Logger: a.cfg.logger,
		Health: func() query.Health { return a.health(rt) },
	})
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	actual := ln.Addr().String()
	a.httpAddr.Store(&actual)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.cfg.logger.Error("weir: http server", "err", err)
		}
	})
	a.cfg.logger.Info("weir: serving http", "addr", actual, "advertised", adv)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		wg.Wait()
		a.httpAddr.Store(nil)
	}, nil
}

// health is the App's state as /healthz and /readyz report it: ready only
// while Running, healthy unless Failed.
func (a *App) health(rt *runtime.Runtime) query.Health {
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
	case Failed:
		h.Reason = "failed"
	case Stopped:
		h.Reason = "stopped"
	}
	return h
}
