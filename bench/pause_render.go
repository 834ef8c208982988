package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"runtime"
	"strings"
	"time"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// warmupsDesc describes a configuration's warm-ups.
func (c pauseConfig) warmupsDesc() string {
	switch {
	case c.kstreams:
		return "2 (default)"
	case c.warmups == 0:
		return "off"
	}
	return fmt.Sprint(c.warmups)
}

func (c pauseConfig) system() string {
	if c.kstreams {
		return "Kafka Streams 4.4 (" + c.protocol + ")"
	}
	return "weir"
}

// kstreamsPeer is the Kafka Streams row (classic protocol) with c's
// standbys, or nil.
func kstreamsPeer(rows []pauseRow, c pauseConfig) *pauseRow {
	for i, r := range rows {
		if r.cfg.kstreams && r.cfg.protocol == "classic" && r.cfg.standbys == c.standbys && r.err == "" && r.skip == "" {
			return &rows[i]
		}
	}
	return nil
}

// target states the target that applies to an event of a row,
// and whether the measurement meets it.
func target(rows []pauseRow, r pauseRow, e eventResult, session time.Duration) string {
	var ts []string
	if e.event == "kill" && r.cfg.standbys >= 1 {
		lim := session + time.Second
		ts = append(ts, fmt.Sprintf("max ≤ %s s: %s", secs(lim), yesNo(e.max() <= lim)))
	}
	if e.event == "add" && !r.cfg.kstreams && r.cfg.warmups > 0 {
		ts = append(ts, "max ≤ 0.2 s + one rebalance: see text")
	}
	if !r.cfg.kstreams && e.event != "none" {
		if peer := kstreamsPeer(rows, r.cfg); peer != nil {
			for _, pe := range peer.events {
				if pe.event == e.event {
					ts = append(ts, fmt.Sprintf("≤ Kafka Streams s%d (%s s): %s", r.cfg.standbys, secs(pe.max()), yesNo(e.max() <= pe.max())))
				}
			}
		}
	}
	return strings.Join(ts, "; ")
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// renderPause is the scenario's markdown: the pauses per event and
// configuration, then memory and disk per instance.
func renderPause(rows []pauseRow, pr *pauseRunner, broker string, quick bool) string {
	var b strings.Builder
	mode := "full"
	if quick {
		mode = "quick"
	}
	fmt.Fprintf(&b, "Broker: %s. Machine: %d CPUs (GOMAXPROCS %d), %s/%s, %s. Mode: %s — %d instances, %d partitions, %d keys of state, %d rec/s offered during the events, session timeout %s and heartbeat interval %s (both systems), exactly-once, 100 ms epochs / commit interval.\n\n",
		broker, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02 15:04 MST"),
		mode, pauseInstances, pausePartitions, pr.keys, pr.rate, pr.session, pr.heartbeat())
	b.WriteString("| event | system | standbys | warm-ups | pause p50 s | pause max s | all moving after s | stuck | target |\n")
	b.WriteString("|---|---|---:|---|---:|---:|---:|---:|---|\n")
	for _, ev := range []string{"none", "kill", "add", "stop"} {
		for _, r := range rows {
			head := fmt.Sprintf("| %s | %s | %d | %s ", ev, r.cfg.system(), r.cfg.standbys, r.cfg.warmupsDesc())
			if r.skip != "" {
				b.WriteString(head + "| skipped¹ | | | | |\n")
				continue
			}
			found := false
			for _, e := range r.events {
				if e.event != ev {
					continue
				}
				found = true
				fmt.Fprintf(&b, "%s| %s | %s | %s | %d | %s |\n", head, secs(e.p50()), secs(e.max()), secs(e.resumed), e.stuck, target(rows, r, e, pr.session))
			}
			if !found && r.err != "" {
				fmt.Fprintf(&b, "%s| FAILED | | | | %s |\n", head, strings.ReplaceAll(r.err, "|", "/"))
			}
		}
	}
	fmt.Fprintf(&b, "\nEvents, in this order on each configuration's fresh application: none (a quiet window of %s: the noise floor), kill (instance 4 of 4 gets SIGKILL), add (a new instance with an empty state dir starts), stop (instance 1 gets SIGTERM and shuts down gracefully). Windows: kill and stop %s, add %s. Pause: per partition, the longest time without output on that partition from the event to the end of its window (from the event to the first output after it included; a partition with no output in the window's last 2 s counts as stuck); p50 and max over the %d partitions. All moving after: event → the last partition's first output after its longest gap. Output is read read_committed, so a pause includes the commit (≤ 100 ms).\n",
		pr.quiet, pr.wins["kill"], pr.wins["add"], pausePartitions)
	b.WriteString("\n| system | standbys | warm-ups | backlog s | RSS MiB per instance | disk MiB per instance |\n|---|---:|---|---:|---|---|\n")
	for _, r := range rows {
		if r.skip != "" || len(r.rssKiB) == 0 {
			continue
		}
		var rss, disk []string
		for i := range r.rssKiB {
			rss = append(rss, fmt.Sprint(r.rssKiB[i]/1024))
			disk = append(disk, fmt.Sprintf("%.0f", float64(r.diskB[i])/(1<<20)))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %.1f | %s | %s |\n", r.cfg.system(), r.cfg.standbys, r.cfg.warmupsDesc(), r.backlog.Seconds(), strings.Join(rss, " / "), strings.Join(disk, " / "))
	}
	fmt.Fprintf(&b, "\nBacklog: four instances start → every preloaded key counted and every partition's output moving. RSS (VmRSS) and disk (the blocks of the files under each instance's state dir, as du counts them) are read %s later, before the first event, with the load running. Kafka Streams runs with -Xmx1g.\n", pr.settle)
	for _, r := range rows {
		if r.skip != "" {
			fmt.Fprintf(&b, "\n¹ %s: skipped: %s\n", r.cfg.name, r.skip)
		}
	}
	return b.String()
}

// writePauseChart draws the total output rate over time around each event
// (kill, add, stop): one panel per event, from 3 s before it to the end of
// its window, a line per configuration.
func writePauseChart(path string, rows []pauseRow) error {
	events := []string{"kill", "add", "stop"}
	const PW, PH, L, T, B, gap = 380, 300, 60, 30, 50, 20
	var shown []pauseRow
	for _, r := range rows {
		if len(r.events) > 0 {
			shown = append(shown, r)
		}
	}
	W := L + len(events)*(PW+gap)
	H := T + PH + B + 16*len(shown) + 10
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	grey := color.RGBA{0xcc, 0xcc, 0xcc, 255}
	black := color.RGBA{0, 0, 0, 255}
	top := 1.0
	for _, r := range shown {
		for _, e := range r.events {
			for _, v := range e.rate {
				top = max(top, v)
			}
		}
	}
	for i, ev := range events {
		x0 := L + i*(PW+gap)
		text(img, x0+PW/2-len(ev)*4, 8, 2, ev, black)
		for x := x0; x <= x0+PW; x++ {
			img.Set(x, T+PH, black)
		}
		for y := T; y <= T+PH; y++ {
			img.Set(x0, y, black)
		}
		for q := 1; q <= 4; q++ {
			y := T + PH - q*PH/4
			for x := x0; x <= x0+PW; x++ {
				img.Set(x, y, grey)
			}
			if i == 0 {
				lab := fmt.Sprintf("%.0f", top*float64(q)/4)
				text(img, x0-6-len(lab)*8, y-5, 2, lab, black)
			}
		}
		for ci, r := range shown {
			var e *eventResult
			for k := range r.events {
				if r.events[k].event == ev {
					e = &r.events[k]
				}
			}
			if e == nil || len(e.rate) == 0 {
				continue
			}
			n := len(e.rate)
			xOf := func(k int) int { return x0 + k*PW/max(n-1, 1) }
			yOf := func(v float64) int { return T + PH - int(v/top*float64(PH)) }
			if ci == 0 { // the event's line and the time labels
				xe := xOf(e.preBins)
				for y := T; y <= T+PH; y += 2 {
					img.Set(xe, y, black)
				}
				text(img, xe-4, T+PH+6, 2, "0", black)
				end := fmt.Sprintf("%.0fs", e.window.Seconds())
				text(img, x0+PW-len(end)*8, T+PH+6, 2, end, black)
				text(img, x0-8, T+PH+6, 2, "-3", black)
			}
			col := palette[ci%len(palette)]
			for k := 1; k < n; k++ {
				line(img, xOf(k-1), yOf(e.rate[k-1]), xOf(k), yOf(e.rate[k]), col)
			}
		}
	}
	text(img, L, T+PH+24, 2, "output rec/s in 200 ms bins, seconds from the event", black)
	for ci, r := range shown {
		col := palette[ci%len(palette)]
		y := T + PH + B + ci*16
		for dy := 0; dy < 10; dy++ {
			for dx := 0; dx < 30; dx++ {
				img.Set(L+dx, y+dy, col)
			}
		}
		text(img, L+40, y, 2, strings.TrimPrefix(r.cfg.name, "pause-"), black)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}
