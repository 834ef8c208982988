package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

const wantViews = `read 6 page views from avro-page-views:
  ann  /docs        referrer -
  ann  /docs/serde  referrer -
  ann  /home        referrer -
  bob  /pricing     referrer -
  bob  /signup      referrer /pricing
  cyd  /home        referrer search
`

func runAndCheck(t *testing.T, registryURL string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out strings.Builder
	require.NoError(t, runDemo(ctx, slog.New(slog.DiscardHandler), &out, registryURL))
	require.True(t, strings.HasSuffix(out.String(), wantViews), out.String())
	return out.String()
}

// Without SCHEMA_REGISTRY_URL: the in-memory registry.
func TestDemoInMemory(t *testing.T) {
	out := runAndCheck(t, "")
	require.Contains(t, out, "schema registry: in memory")
	require.Contains(t, out, "Click v1 as schema id 1, Click v2 as schema id 2 (subject avro-clicks-value)")
}

// With a registry over HTTP: the one at SCHEMA_REGISTRY_URL, or else
// franz-go's in-memory srfake served over HTTP.
func TestDemoWithRegistry(t *testing.T) {
	url := os.Getenv("SCHEMA_REGISTRY_URL")
	if url == "" {
		fake := srfake.New()
		defer fake.Close()
		url = fake.URL()
	}
	out := runAndCheck(t, url)
	require.Contains(t, out, "schema registry: "+url)
}
