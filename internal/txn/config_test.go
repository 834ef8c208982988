package exactlyonce_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/exactlyonce"
	"github.com/weirstream/weir/internal/kafka"
)

func TestConfigValidate(t *testing.T) {
	ok := exactlyonce.Config{
		Kafka:           kafka.Config{Brokers: []string{"127.0.0.1:1"}},
		TransactionalID: "app-1",
	}
	require.NoError(t, ok.Validate())

	for name, tc := range map[string]struct {
		mod  func(*exactlyonce.Config)
		want string
	}{
		"empty id":             {func(c *exactlyonce.Config) { c.TransactionalID = "" }, "empty transactional id"},
		"no brokers":           {func(c *exactlyonce.Config) { c.Kafka.Brokers = nil }, "no brokers"},
		"timeout = session":    {func(c *exactlyonce.Config) { c.TransactionTimeout, c.SessionTimeout = 10*time.Second, 10*time.Second }, "not below"},
		"timeout > session":    {func(c *exactlyonce.Config) { c.TransactionTimeout = time.Minute }, "not below"}, // default session 45 s
		"negative timeout":     {func(c *exactlyonce.Config) { c.RequestTimeout = -time.Second }, "negative"},
		"tiny timeout":         {func(c *exactlyonce.Config) { c.TransactionTimeout = time.Microsecond }, "out of range"},
		"tiny request timeout": {func(c *exactlyonce.Config) { c.RequestTimeout = time.Millisecond }, "request timeout"},
		"scram": {func(c *exactlyonce.Config) {
			c.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLScramSHA256, User: "u", Password: "p"}
		}, "not supported"},
		"bad sasl": {func(c *exactlyonce.Config) { c.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain} }, "user"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, exactlyonce.ErrConfig)
			require.ErrorContains(t, err, tc.want)
			_, err = exactlyonce.New(t.Context(), cfg)
			require.ErrorIs(t, err, exactlyonce.ErrConfig)
		})
	}

	// The default transaction timeout fits a short session timeout.
	short := ok
	short.SessionTimeout = 6 * time.Second
	require.NoError(t, short.Validate())
	plain := ok
	plain.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain, User: "u", Password: "p"}
	require.NoError(t, plain.Validate())
}

func TestLoadOrCreateInstanceID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "nested")
	id, err := exactlyonce.LoadOrCreateInstanceID(dir)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{32}$`, id)
	again, err := exactlyonce.LoadOrCreateInstanceID(dir)
	require.NoError(t, err)
	require.Equal(t, id, again)

	other, err := exactlyonce.LoadOrCreateInstanceID(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, id, other)

	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, exactlyonce.InstanceIDFile, entries[0].Name())

	// An id chosen by hand is kept; a damaged file is an error, not a new id.
	custom := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(custom, exactlyonce.InstanceIDFile), []byte("host-a.1\n"), 0o644))
	got, err := exactlyonce.LoadOrCreateInstanceID(custom)
	require.NoError(t, err)
	require.Equal(t, "host-a.1", got)
	for _, bad := range []string{"", "has space", strings.Repeat("x", 300)} {
		require.NoError(t, os.WriteFile(filepath.Join(custom, exactlyonce.InstanceIDFile), []byte(bad), 0o644))
		_, err := exactlyonce.LoadOrCreateInstanceID(custom)
		require.Error(t, err, "%q", bad)
	}
	_, err = exactlyonce.LoadOrCreateInstanceID("")
	require.Error(t, err)
}

// TestLoadOrCreateInstanceIDRace creates the id from many goroutines at
// once: all of them get the same one.
func TestLoadOrCreateInstanceIDRace(t *testing.T) {
	dir := t.TempDir()
	ids := make([]string, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := exactlyonce.LoadOrCreateInstanceID(dir)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
}
