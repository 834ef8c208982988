package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/status"
)

// The status page is tested in a real browser: headless Chromium loads it
// from a running two-instance application, runs its script, and the test
// reads the page the script drew.

// browserEnv names the browser (default: chromium on PATH); with
// requireBrowserEnv=1 (.ci/run, which installs Chromium) a missing browser
// fails the test instead of skipping it.
const (
	browserEnv        = "WEIR_CHROMIUM"
	requireBrowserEnv = "WEIR_BROWSER_TESTS"
	// screenshotEnv, if set, is where the test saves a screenshot of the
	// page (docs/status-page.png is made this way).
	screenshotEnv = "WEIR_STATUS_SCREENSHOT"
)

func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv(browserEnv)
	if path == "" {
		path, _ = exec.LookPath("chromium")
	}
	if path == "" {
		if os.Getenv(requireBrowserEnv) == "1" {
			t.Fatalf("no Chromium (set %s, or install the chromium package)", browserEnv)
		}
		t.Skipf("no Chromium to drive the status page (set %s or install chromium)", browserEnv)
	}
	return path
}

// browse loads url in a new headless Chromium, lets its scripts run for
// budget of virtual time (fetches included), and returns the DOM; with
// screenshot set it saves a PNG there instead and returns "".
func browse(t *testing.T, browser, url string, budget time.Duration, screenshot string) string {
	t.Helper()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars", "--window-size=1400,2000",
		"--virtual-time-budget=" + strconv.FormatInt(budget.Milliseconds(), 10),
	}
	if screenshot != "" {
		args = append(args, "--screenshot="+screenshot)
	} else {
		args = append(args, "--dump-dom")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	out, err := cmd.Output()
	require.NoError(t, err, "chromium %v", args)
	return string(out)
}

// groupView reads an instance's view of the group.
func groupView(t *testing.T, addr string) status.Group {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/status/group")
	require.NoError(t, err)
	defer resp.Body.Close()
	var g status.Group
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&g))
	return g
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// rowOf returns the group table's row of one instance.
func rowOf(dom, addr string) string {
	re := regexp.MustCompile(`<tr data-instance="` + regexp.QuoteMeta(addr) + `"[^>]*>.*?</tr>`)
	return re.FindString(dom)
}

// Two instances of a word count, one in this process and one a child
// process: the page of either shows the topology's every node, both
// instances with their partitions, and charts with data; the child killed
// with SIGKILL shows as gone once the group has dropped it (its session
// timeout, 3 s).
func TestStatusPageInABrowser(t *testing.T) {
	kafkatest.Long(t)
	browser := chromium(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := "status-" + kafkatest.Topic(t)
	topo := wordCountTopology(t, in, out)

	a := startInstance(t, topo, env, appID, weir.WithHTTP("127.0.0.1:0"), weir.WithGuarantee(weir.ExactlyOnce))
	defer func() { require.NoError(t, a.stop(t)) }()
	childAddr := freeAddr(t)
	b := startChild(t, env, "continuous", appID, in, out, t.TempDir(), "WEIR_CHILD_HTTP="+childAddr)
	addr := httpAddrs(t, a)[0]

	want := map[string]int64{}
	produceLines(t, env, in, 0, 200, []string{"alpha", "beta", "gamma", "delta", "epsilon"}, want)
	waitForCounts(t, env, out, want)
	require.Eventually(t, func() bool {
		g := groupView(t, addr)
		if len(g.Members) != 2 {
			return false
		}
		for _, m := range g.Members {
			if m.Report == nil || len(m.Assigned) == 0 || len(m.Report.Samples) < 2 {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "the group never showed two reporting instances")

	dom := browse(t, browser, "http://"+addr+"/", 5*time.Second, "")
	graph, err := status.ParseDescription(topo.Describe())
	require.NoError(t, err)
	for _, sub := range graph.Subtopologies {
		for _, n := range sub.Nodes {
			require.Contains(t, dom, `data-node="`+n.Name+`"`, "the topology graph lacks %s", n.Name)
		}
	}
	for _, inst := range []string{addr, childAddr} {
		row := rowOf(dom, inst)
		require.NotEmpty(t, row, "no row for instance %s", inst)
		require.Contains(t, row, `data-state="running"`)
		require.Contains(t, row, `data-partition=`, "instance %s shows no partitions", inst)
	}
	points := regexp.MustCompile(`id="chart-in" data-points="(\d+)"`).FindStringSubmatch(dom)
	require.Len(t, points, 2, "no input-rate chart")
	n, _ := strconv.Atoi(points[1])
	require.Positive(t, n, "the input-rate chart has no data")
	if path := os.Getenv(screenshotEnv); path != "" {
		browse(t, browser, "http://"+addr+"/", 5*time.Second, path)
	}

	b.kill(t)
	killed := time.Now()
	require.Eventually(t, func() bool {
		for _, g := range groupView(t, addr).Gone {
			if g.Addr == childAddr {
				return true
			}
		}
		return false
	}, time.Minute, 200*time.Millisecond, "the killed instance never showed as gone")
	t.Logf("the killed instance showed as gone after %v", time.Since(killed).Round(100*time.Millisecond))
	dom = browse(t, browser, "http://"+addr+"/", 3*time.Second, "")
	require.Contains(t, rowOf(dom, childAddr), `data-state="gone"`, fmt.Sprintf("row: %s", rowOf(dom, childAddr)))
}
