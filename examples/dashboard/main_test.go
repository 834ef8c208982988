package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeCurls returns the URLs of the README's curl lines.
func readmeCurls(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("README.md")
	require.NoError(t, err)
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "curl -s ") {
			continue
		}
		urls = append(urls, strings.Trim(strings.TrimPrefix(line, "curl -s "), "'"))
	}
	require.NoError(t, sc.Err())
	return urls
}

// The README's curl lines, against the example on the embedded broker (on
// free ports instead of 8080 and 8081), get the answers the README shows.
func TestReadmeCurlLines(t *testing.T) {
	urls := readmeCurls(t)
	require.Len(t, urls, 10)
	want := demoCounts()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	checked := make(chan int, 1)
	opts := options{httpAddrs: []string{"127.0.0.1:0", "127.0.0.1:0"}, log: slog.New(slog.DiscardHandler)}
	err := run(ctx, opts, func(addrs []string) {
		defer cancel()
		n := 0
		for _, u := range urls {
			u = strings.Replace(u, "127.0.0.1:8080", addrs[0], 1)
			u = strings.Replace(u, "127.0.0.1:8081", addrs[1], 1)
			resp, err := http.Get(u)
			require.NoError(t, err, u)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			var obj map[string]any
			switch {
			case strings.Contains(u, "/stores/counts/keys/stream"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
				require.NoError(t, json.Unmarshal(body, &obj))
				require.EqualValues(t, want["stream"], obj["value"], u)
				require.EqualValues(t, 4, obj["value"], "the README shows 4")
			case strings.Contains(u, "from=a&to=c"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
				var r struct {
					Entries []struct {
						Key   string
						Value int64
					}
				}
				require.NoError(t, json.Unmarshal(body, &r))
				got := map[string]int64{}
				for _, e := range r.Entries {
					got[e.Key] = e.Value
				}
				exp := map[string]int64{}
				for w, c := range want {
					if w >= "a" && w < "c" {
						exp[w] = c
					}
				}
				require.Equal(t, exp, got, u)
				require.EqualValues(t, 4, got["a"])
				require.EqualValues(t, 4, got["and"])
			case strings.Contains(u, "durian"), strings.Contains(u, "/nope/"):
				require.Equal(t, http.StatusNotFound, resp.StatusCode, u)
				require.Contains(t, string(body), `"error"`)
			case strings.Contains(u, "limit=-1"):
				require.Equal(t, http.StatusBadRequest, resp.StatusCode, u)
				require.Contains(t, string(body), "positive integer")
			case strings.HasSuffix(u, "/healthz"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
			case strings.HasSuffix(u, "/readyz"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
				require.Contains(t, string(body), `"ready": true`)
			case strings.HasSuffix(u, "/metrics"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
				require.Contains(t, string(body), `weir_records_in_total{application="dashboard"`)
			case strings.HasSuffix(u, "/progress"):
				require.Equal(t, http.StatusOK, resp.StatusCode, u)
				var reports []any
				require.NoError(t, json.Unmarshal(body, &reports))
			default:
				t.Fatalf("no check for the README's %s", u)
			}
			n++
		}
		checked <- n
	})
	require.NoError(t, err)
	require.Equal(t, len(urls), <-checked)
}
