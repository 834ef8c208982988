package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The profiles a child writes, each to a directory named by the parent's
// flag (-cpuprofile, -blockprofile, -mutexprofile, -trace, -phases) and
// passed to the child in these environment variables. Every file is named
// <system>-<workload>-<run>.<kind>.
const (
	envCPUProfile   = "WEIR_BENCH_CPUPROFILE"
	envBlockProfile = "WEIR_BENCH_BLOCKPROFILE"
	envMutexProfile = "WEIR_BENCH_MUTEXPROFILE"
	envTrace        = "WEIR_BENCH_TRACE"
	envPhases       = "WEIR_BENCH_PHASES"

	// blockRate samples one blocking event per 10 µs spent blocked
	// (runtime.SetBlockProfileRate); longer events are always recorded.
	blockRate = 10_000
	// mutexFraction records one contention event in 5.
	mutexFraction = 5
	// traceStart and traceLength are the window of the execution trace:
	// from 20 s after the child starts (start-up, group join and the
	// first epochs are behind it), for 5 s (a full-size run's trace of
	// its whole length would be gigabytes).
	traceStart  = 20 * time.Second
	traceLength = 5 * time.Second
)

// altPrefix marks a weir row whose child is the -alt binary's (a build of
// the bench against another version of the library): "alt.weir-cont-eos"
// next to "weir-cont-eos" in -systems runs the two builds in one run, in
// the order given, on the same input — a before/after in one table.
const altPrefix = "alt."

// altBinary is the -alt flag: the binary of the alt.… rows' children.
var altBinary string

// profileFlags are the parent's profile flags; setProfileEnv hands the
// directories to every child through its environment.
type profileFlags struct{ cpu, block, mutex, trace, phases *string }

func (f profileFlags) setEnv() error {
	for _, p := range []struct{ env, dir string }{
		{envCPUProfile, *f.cpu}, {envBlockProfile, *f.block}, {envMutexProfile, *f.mutex},
		{envTrace, *f.trace}, {envPhases, *f.phases},
	} {
		if p.dir == "" {
			continue
		}
		abs, err := filepath.Abs(p.dir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return err
		}
		if err := os.Setenv(p.env, abs); err != nil {
			return err
		}
	}
	return nil
}

// startProfiles starts the profiles the environment asks for in a child;
// the returned stop writes them. name is <system>-<workload>-<run>.
func startProfiles(ctx context.Context, name string) (stop func()) {
	var stops []func()
	file := func(env, ext string) *os.File {
		d := os.Getenv(env)
		if d == "" {
			return nil
		}
		f, err := os.Create(filepath.Join(d, name+ext))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: profile:", err)
			return nil
		}
		return f
	}
	if f := file(envCPUProfile, ".pprof"); f != nil {
		if pprof.StartCPUProfile(f) == nil {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	for _, p := range []struct {
		env, kind, ext string
		on, off        func()
	}{
		{envBlockProfile, "block", ".block.pprof", func() { runtime.SetBlockProfileRate(blockRate) }, func() { runtime.SetBlockProfileRate(0) }},
		{envMutexProfile, "mutex", ".mutex.pprof", func() { runtime.SetMutexProfileFraction(mutexFraction) }, func() { runtime.SetMutexProfileFraction(0) }},
	} {
		if f := file(p.env, p.ext); f != nil {
			p.on()
			stops = append(stops, func() {
				_ = pprof.Lookup(p.kind).WriteTo(f, 0)
				p.off()
				f.Close()
			})
		}
	}
	if f := file(envTrace, ".trace"); f != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer f.Close()
			select {
			case <-time.After(traceStart):
			case <-ctx.Done():
				return
			}
			if trace.Start(f) != nil {
				return
			}
			select {
			case <-time.After(traceLength):
			case <-ctx.Done():
			}
			trace.Stop()
		}()
		stops = append(stops, func() { <-done })
	}
	return func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
}

// writePhases writes, every 2 s until ctx is done, the epoch-end phase
// histograms of reg (weir_epoch_phase_seconds{phase}: count, sum, mean)
// to <dir>/<name>.phases.txt, when -phases asked for them.
func writePhases(ctx context.Context, reg *prometheus.Registry, name string) {
	d := os.Getenv(envPhases)
	if d == "" {
		return
	}
	path := filepath.Join(d, name+".phases.txt")
	write := func() {
		mfs, err := reg.Gather()
		if err != nil {
			return
		}
		var b strings.Builder
		for _, mf := range mfs {
			if !strings.Contains(mf.GetName(), "phase") && !strings.Contains(mf.GetName(), "commit") {
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				if h := m.GetHistogram(); h != nil && h.GetSampleCount() > 0 {
					fmt.Fprintf(&b, "%s{%s} count=%d sum_s=%.3f mean_ms=%.3f\n", mf.GetName(), strings.Join(labels, ","),
						h.GetSampleCount(), h.GetSampleSum(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
				}
			}
		}
		_ = os.WriteFile(path, []byte(b.String()), 0o644)
	}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			write()
			return
		case <-t.C:
			write()
		}
	}
}
