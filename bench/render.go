package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

func renderTable(rows []row, broker string, p params, quick bool) string {
	var b strings.Builder
	mode := "full"
	if quick {
		mode = "quick"
	}
	if p.runs > 1 {
		mode += fmt.Sprintf(", each throughput row the median of %d runs", p.runs)
	}
	fmt.Fprintf(&b, "Broker: %s. Machine: %d CPUs (GOMAXPROCS %d), %s/%s, %s. Mode: %s — stateless %d records, word count %d lines × 10 words; latency at %d rec/s offered for %s.\n\n",
		broker, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, time.Now().UTC().Format("2006-01-02 15:04 MST"),
		mode, p.statelessN, p.wordLines, p.latRate, p.latDur)
	b.WriteString("| workload | system | guarantee | input recs | output recs | wall s | input rec/s | × ceiling | steady rec/s | peak RSS MiB | CPU s / M input | lat p50 ms | lat p99 ms | lat p99.9 ms |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	ceil := map[string]float64{}
	for _, r := range rows {
		if r.system == sysCeilingALO || r.system == sysCeilingEOS {
			ceil[r.workload+"/"+r.system] = r.rate()
		}
	}
	for _, r := range rows {
		g := "at-least-once"
		ck := r.workload + "/" + sysCeilingALO
		if eos(r.system) {
			g, ck = "exactly-once", r.workload+"/"+sysCeilingEOS
		}
		ratio := "—"
		if c := ceil[ck]; c > 0 && r.rate() > 0 {
			ratio = fmt.Sprintf("%.2f", r.rate()/c)
		}
		lat := "| — | — | — "
		if r.lat != nil {
			if r.lat.err != "" && len(r.lat.sorted) == 0 {
				lat = "| failed | | "
			} else {
				lat = fmt.Sprintf("| %s | %s | %s ", ms(r.lat.pct(.5)), ms(r.lat.pct(.99)), ms(r.lat.pct(.999)))
			}
		}
		if r.skip != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | | | skipped¹ | | | | | | | | |\n", r.workload, r.system, g)
			continue
		}
		if r.latOnly {
			fmt.Fprintf(&b, "| %s | %s | %s | | | — | — | — | — | — | — %s|\n", r.workload, r.system, g, lat)
			continue
		}
		if r.err != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d/%d | FAILED | | | | %d | %.1f %s| %s |\n", r.workload, r.system, g, r.in, r.got, r.want, r.rssKiB/1024, r.cpu, lat, strings.ReplaceAll(r.err, "|", "/"))
			continue
		}
		steady := "—"
		if r.steady > 0 {
			steady = fmt.Sprintf("%.0f", float64(r.in)/r.steady.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.2f | %.0f | %s | %s | %d | %.2f %s|\n",
			r.workload, r.system, g, r.in, r.got, r.wall.Seconds(), r.rate(), ratio, steady,
			r.rssKiB/1024, r.cpu/float64(r.in)*1e6, lat)
	}
	b.WriteString("\nwall s: child process start → the output topic holds the expected records for a read_committed reader (includes start-up and group join). steady rec/s: input records / (first output visible → last). Ratios use input rec/s; at-least-once rows against ceiling-alo, exactly-once rows against ceiling-eos, per workload. Peak RSS is the child process's VmHWM (read from /proc just before it is stopped; ru_maxrss would carry the parent's high-water mark across fork+exec); CPU is its rusage utime+stime, start-up and shutdown included. The parent's preloading and its read_committed counting consumer share the 2 CPUs with the child; the broker's CPU is not counted.\n")
	for _, r := range rows {
		if r.skip != "" {
			fmt.Fprintf(&b, "\n¹ %s %s: skipped: %s\n", r.workload, r.system, r.skip)
		}
	}
	for _, r := range rows {
		if r.lat != nil && r.lat.err != "" {
			fmt.Fprintf(&b, "\nlatency %s: %s\n", r.system, r.lat.err)
		}
	}
	return b.String()
}

type curve struct {
	name   string
	sorted []time.Duration
}

var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 255}, {0xff, 0x7f, 0x0e, 255}, {0x2c, 0xa0, 0x2c, 255},
	{0xd6, 0x27, 0x28, 255}, {0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255},
	{0xe3, 0x77, 0xc2, 255}, {0x17, 0xbe, 0xcf, 255},
}

// writeChart draws latency CDFs: x is log10 latency from 0.1 ms to 10 s
// (grid lines at each decade), y is the cumulative fraction 0..1 (grid
// every 0.1, plus a line at 0.99). Colours follow the order of curves;
// a legend swatch and name per curve sits top left.
func writeChart(path string, curves []curve) error {
	const W, H, L, R, T, B = 900, 520, 70, 30, 20, 60
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	grey := color.RGBA{0xcc, 0xcc, 0xcc, 255}
	black := color.RGBA{0, 0, 0, 255}
	pw, ph := W-L-R, H-T-B
	xOf := func(d time.Duration) int {
		msv := math.Max(float64(d)/1e6, 0.1)
		f := (math.Log10(msv) + 1) / 5 // 0.1 ms .. 10 s
		return L + int(math.Min(f, 1)*float64(pw))
	}
	yOf := func(q float64) int { return T + ph - int(q*float64(ph)) }
	for dec, lab := range []string{"0.1 ms", "1 ms", "10 ms", "100 ms", "1 s", "10 s"} {
		x := L + dec*pw/5
		for y := T; y <= T+ph; y++ {
			img.Set(x, y, grey)
		}
		text(img, x-len(lab)*4, T+ph+8, 2, lab, black)
	}
	text(img, L+pw/2-130, H-14, 2, "latency, log scale", black)
	for _, q := range []float64{0, .5, .9, .99} {
		lab := strconv.FormatFloat(q, 'f', -1, 64)
		text(img, L-6-len(lab)*8, yOf(q)-5, 2, lab, black)
	}
	for i := 0; i <= 10; i++ {
		y := yOf(float64(i) / 10)
		for x := L; x <= L+pw; x++ {
			img.Set(x, y, grey)
		}
	}
	y99 := yOf(.99)
	for x := L; x <= L+pw; x += 2 {
		img.Set(x, y99, black)
	}
	for x := L; x <= L+pw; x++ {
		img.Set(x, T+ph, black)
	}
	for y := T; y <= T+ph; y++ {
		img.Set(L, y, black)
	}
	for ci, c := range curves {
		col := palette[ci%len(palette)]
		for dy := 0; dy < 10; dy++ { // legend swatch
			for dx := 0; dx < 30; dx++ {
				img.Set(L+10+dx, T+10+ci*16+dy, col)
			}
		}
		text(img, L+46, T+10+ci*16, 2, c.name, black)
		n := len(c.sorted)
		if n == 0 {
			continue
		}
		px, py := -1, -1
		for i := 0; i < n; i += max(1, n/4000) {
			x, y := xOf(c.sorted[i]), yOf(float64(i+1)/float64(n))
			if px >= 0 {
				line(img, px, py, x, y, col)
			}
			px, py = x, y
		}
		line(img, px, py, xOf(c.sorted[n-1]), yOf(1), col)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for s := 0; s <= steps; s++ {
		x := x0 + (x1-x0)*s/steps
		y := y0 + (y1-y0)*s/steps
		img.Set(x, y, c)
		img.Set(x, y+1, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
