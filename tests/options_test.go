package tests

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/microbatch"
)

// aCert, getCert and admitAll stand for a certificate and an auth hook in
// the HTTP rows: New checks they are set, not what they hold.
var (
	aCert    = []tls.Certificate{{}}
	getCert  = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, errors.New("none") }
	admitAll = func(*http.Request) error { return nil }
)

// validBase is the smallest valid set of options.
func validBase() []weir.Option {
	return []weir.Option{weir.WithBrokers("localhost:9092"), weir.WithApplicationID("a")}
}

// One row per invalid value of every option that has one: New rejects it
// with an error wrapping ErrConfig that names the option and the bound.
func TestNewRejectsEachInvalidOption(t *testing.T) {
	topo := wordCountTopology(t, "in", "out")
	long := strings.Repeat("i", 250)
	for _, tc := range []struct {
		name string
		opts []weir.Option // replace the base when they include brokers or id
		opt  weir.Option
		want string
	}{
		{"no brokers", []weir.Option{weir.WithApplicationID("a")}, nil, "WithBrokers: no brokers"},
		{"empty broker list", nil, weir.WithBrokers(), "WithBrokers: no brokers"},
		{"blank broker", nil, weir.WithBrokers(" "), "WithBrokers: empty broker address"},
		{"broker without port", nil, weir.WithBrokers("localhost"), `WithBrokers: "localhost" is not host:port`},
		{"no application id", []weir.Option{weir.WithBrokers("localhost:9092")}, nil, "WithApplicationID: no application id"},
		{"empty application id", nil, weir.WithApplicationID(""), "WithApplicationID: no application id"},
		{"mode -1", nil, weir.WithMode(weir.Mode(-1)), "WithMode: unknown mode -1"},
		{"mode 2", nil, weir.WithMode(weir.Mode(2)), "WithMode: unknown mode 2"},
		{"guarantee -1", nil, weir.WithGuarantee(weir.Guarantee(-1)), "WithGuarantee: unknown guarantee -1"},
		{"guarantee 2", nil, weir.WithGuarantee(weir.Guarantee(2)), "WithGuarantee: unknown guarantee 2"},
		{"micro-batch processing time 0", nil, weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.ProcessingTime(0)}), "WithMicroBatch: microbatch: processing-time interval 0s is below 1ms"},
		{"micro-batch negative records", nil, weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: -1}), "WithMicroBatch: microbatch: MaxRecordsPerBatch -1"},
		{"micro-batch negative bytes", nil, weir.WithMicroBatch(microbatch.Config{MaxBytesPerBatch: -1}), "WithMicroBatch: microbatch: MaxBytesPerBatch -1"},
		{"micro-batch negative poll", nil, weir.WithMicroBatch(microbatch.Config{PollInterval: -time.Second}), "WithMicroBatch: microbatch: PollInterval -1s"},
		{"epoch interval 0", nil, weir.WithEpochInterval(0), "WithEpochInterval: 0s is below 1ms"},
		{"epoch interval 999µs", nil, weir.WithEpochInterval(999 * time.Microsecond), "WithEpochInterval: 999µs is below 1ms"},
		{"epoch interval negative", nil, weir.WithEpochInterval(-time.Second), "WithEpochInterval: -1s is below 1ms"},
		{"sasl mechanism", nil, weir.WithSASL("GSSAPI", "u", "p"), `WithSASL: kafka: invalid configuration: unsupported SASL mechanism "GSSAPI"`},
		{"sasl user", nil, weir.WithSASL("PLAIN", "", "p"), "WithSASL: kafka: invalid configuration: SASL user is empty"},
		{"sasl password", nil, weir.WithSASL("SCRAM-SHA-512", "u", ""), "WithSASL: kafka: invalid configuration: SASL password is empty"},
		{"bad-record policy -1", nil, weir.WithBadRecordPolicy(weir.BadRecordPolicy(-1)), "WithBadRecordPolicy: unknown policy -1"},
		{"bad-record policy 3", nil, weir.WithBadRecordPolicy(weir.DeadLetter + 1), "WithBadRecordPolicy: unknown policy 3"},
		{"session timeout negative", nil, weir.WithSessionTimeout(-time.Second), "WithSessionTimeout: -1s is not within 1s and 30m0s"},
		{"session timeout 999ms", []weir.Option{weir.WithHeartbeatInterval(100 * time.Millisecond)}, weir.WithSessionTimeout(999 * time.Millisecond), "WithSessionTimeout: 999ms is not within 1s and 30m0s"},
		{"session timeout 31m", nil, weir.WithSessionTimeout(31 * time.Minute), "WithSessionTimeout: 31m0s is not within 1s and 30m0s"},
		{"heartbeat negative", nil, weir.WithHeartbeatInterval(-time.Second), "WithHeartbeatInterval: -1s is negative"},
		{"heartbeat equal to session", nil, weir.WithHeartbeatInterval(45 * time.Second), "WithHeartbeatInterval: 45s is not below the session timeout 45s"},
		{"heartbeat above session", nil, weir.WithHeartbeatInterval(time.Hour), "WithHeartbeatInterval: 1h0m0s is not below the session timeout 45s"},
		{"default heartbeat above session", nil, weir.WithSessionTimeout(2 * time.Second), "WithHeartbeatInterval: the default 3s is not below the session timeout 2s"},
		{"instance id too long", nil, weir.WithInstanceID(long), "WithInstanceID: 250 characters, more than 249"},
		{"instance id character", nil, weir.WithInstanceID("host:1"), `WithInstanceID: "host:1" has ":"`},
		{"staging limit negative", nil, weir.WithStagingLimit(-5), "WithStagingLimit: -5 is negative"},
		{"cache max bytes negative", nil, weir.WithCacheMaxBytes(-1), "WithCacheMaxBytes: -1 is negative"},
		{"cache with ForEachBatch", []weir.Option{weir.WithMicroBatch(microbatch.Config{ForEachBatch: discardBatches})},
			weir.WithCacheMaxBytes(1 << 20), "WithCacheMaxBytes: record caches do not work with micro-batch ForEachBatch"},
		{"replication factor 0", nil, weir.WithReplicationFactor(0), "WithReplicationFactor: 0 is neither -1"},
		{"replication factor -2", nil, weir.WithReplicationFactor(-2), "WithReplicationFactor: -2 is neither -1"},
		{"topic config cleanup.policy", nil, weir.WithTopicConfig("cleanup.policy", "delete"), `WithTopicConfig: topic config "cleanup.policy"`},
		{"topic config empty key", nil, weir.WithTopicConfig("", "x"), `WithTopicConfig: topic config ""`},
		{"sink partitions 0", nil, weir.WithCreateSinkTopics(0, nil), "WithCreateSinkTopics: 0 partitions is below 1"},
		{"sink partitions negative", nil, weir.WithCreateSinkTopics(-1, nil), "WithCreateSinkTopics: -1 partitions is below 1"},
		{"sink config empty key", nil, weir.WithCreateSinkTopics(1, map[string]string{"": "x"}), "WithCreateSinkTopics: empty topic config key"},
		{"http no port", nil, weir.WithHTTP("localhost"), `WithHTTP: "localhost" is not host:port`},
		{"http empty", nil, weir.WithHTTP(""), `WithHTTP: "" is not host:port`},
		{"advertised no port", nil, weir.WithAdvertisedHTTP("host"), `WithAdvertisedHTTP: "host" is not host:port`},
		{"advertised no host", nil, weir.WithAdvertisedHTTP(":8080"), `WithAdvertisedHTTP: ":8080" lacks a host or a port`},
		{"advertised empty port", nil, weir.WithAdvertisedHTTP("host:"), `WithAdvertisedHTTP: "host:" lacks a host or a port`},
		{"advertised other scheme", nil, weir.WithAdvertisedHTTP("ftp://host:8080"), `WithAdvertisedHTTP: "ftp://host:8080" is not host:port`},
		{"advertised http with tls", []weir.Option{weir.WithHTTP(":0"), weir.WithHTTPTLS(&tls.Config{Certificates: aCert})}, weir.WithAdvertisedHTTP("http://host:8080"),
			`WithAdvertisedHTTP: "http://host:8080" is plain HTTP but the instance serves TLS`},
		{"advertised https without tls", []weir.Option{weir.WithHTTP(":0")}, weir.WithAdvertisedHTTP("https://host:8080"),
			`WithAdvertisedHTTP: "https://host:8080" is https:// but the instance serves plain HTTP`},
		{"http tls nil", []weir.Option{weir.WithHTTP(":0")}, weir.WithHTTPTLS(nil), "WithHTTPTLS: nil *tls.Config"},
		{"http tls without http", nil, weir.WithHTTPTLS(&tls.Config{Certificates: aCert}), "WithHTTPTLS: set without WithHTTP"},
		{"http tls no certificate", []weir.Option{weir.WithHTTP(":0")}, weir.WithHTTPTLS(&tls.Config{RootCAs: x509.NewCertPool()}), "WithHTTPTLS: no server certificate"},
		{"http tls verify without ClientCAs", []weir.Option{weir.WithHTTP(":0")},
			weir.WithHTTPTLS(&tls.Config{Certificates: aCert, ClientAuth: tls.RequireAndVerifyClientCert}),
			"WithHTTPTLS: ClientAuth RequireAndVerifyClientCert verifies client certificates but ClientCAs is nil"},
		{"http tls unverified client certificates", []weir.Option{weir.WithHTTP(":0")},
			weir.WithHTTPTLS(&tls.Config{Certificates: aCert, ClientAuth: tls.RequireAnyClientCert}),
			"WithHTTPTLS: ClientAuth RequireAnyClientCert accepts any client certificate unverified"},
		{"http mtls nothing to forward with", []weir.Option{weir.WithHTTP(":0")},
			weir.WithHTTPTLS(&tls.Config{GetCertificate: getCert, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: x509.NewCertPool()}),
			"WithHTTPTLS: client certificates are required but forwarding between instances has none to present"},
		{"http auth nil", []weir.Option{weir.WithHTTP(":0")}, weir.WithHTTPAuth(nil), "WithHTTPAuth: nil function"},
		{"http auth without http", nil, weir.WithHTTPAuth(admitAll), "WithHTTPAuth: set without WithHTTP"},
		{"progress reports negative", nil, weir.WithProgressReports(-1), "WithProgressReports: -1 is negative"},
		{"compression brotli", nil, weir.WithCompression("brotli"), `WithCompression: kafka: invalid configuration: compression "brotli" is not none, gzip, snappy, lz4 or zstd`},
		{"compression upper case", nil, weir.WithCompression("LZ4"), `WithCompression: kafka: invalid configuration: compression "LZ4" is not`},
		{"compression level without codec", nil, weir.WithCompressionLevel(3), `WithCompressionLevel: kafka: invalid configuration: compression level 3 with compression "none", which has no levels`},
		{"compression level lz4", []weir.Option{weir.WithCompression(weir.CompressionLZ4)}, weir.WithCompressionLevel(9), `WithCompressionLevel: kafka: invalid configuration: compression level 9 with compression "lz4"`},
		{"compression level gzip 10", []weir.Option{weir.WithCompression(weir.CompressionGZIP)}, weir.WithCompressionLevel(10), "WithCompressionLevel: kafka: invalid configuration: gzip compression level 10 is not within 1 and 9"},
		{"compression level gzip -1", []weir.Option{weir.WithCompression(weir.CompressionGZIP)}, weir.WithCompressionLevel(-1), "WithCompressionLevel: kafka: invalid configuration: gzip compression level -1 is not within 1 and 9"},
		{"compression level zstd 23", []weir.Option{weir.WithCompression(weir.CompressionZSTD)}, weir.WithCompressionLevel(23), "WithCompressionLevel: kafka: invalid configuration: zstd compression level 23 is not within -131072 and 22"},
		{"linger negative", nil, weir.WithLinger(-time.Millisecond), "WithLinger: kafka: invalid configuration: linger -1ms is not within 1ms and 10s"},
		{"linger 999µs", nil, weir.WithLinger(999 * time.Microsecond), "WithLinger: kafka: invalid configuration: linger 999µs is not within 1ms and 10s"},
		{"linger 11s", nil, weir.WithLinger(11 * time.Second), "WithLinger: kafka: invalid configuration: linger 11s is not within 1ms and 10s"},
		{"batch size negative", nil, weir.WithBatchSize(-1), "WithBatchSize: kafka: invalid configuration: batch size -1 is not within 1 and 104857600"},
		{"batch size above 100 MiB", nil, weir.WithBatchSize(100<<20 + 1), "WithBatchSize: kafka: invalid configuration: batch size 104857601 is not within 1 and 104857600"},
		{"max request size below 1 MiB", nil, weir.WithMaxRequestSize(1<<20 - 1), "WithMaxRequestSize: kafka: invalid configuration: max request size 1048575 is not within 1048576 and 104857600"},
		{"max request size above 100 MiB", nil, weir.WithMaxRequestSize(100<<20 + 1), "WithMaxRequestSize: kafka: invalid configuration: max request size 104857601 is not within"},
		{"fetch min bytes negative", nil, weir.WithFetchMinBytes(-1), "WithFetchMinBytes: kafka: invalid configuration: fetch min bytes -1 is not within 1 and 104857600"},
		{"fetch min bytes above 100 MiB", nil, weir.WithFetchMinBytes(100<<20 + 1), "WithFetchMinBytes: kafka: invalid configuration: fetch min bytes 104857601 is not within"},
		{"max partition fetch bytes 1023", nil, weir.WithMaxPartitionFetchBytes(1023), "WithMaxPartitionFetchBytes: kafka: invalid configuration: max partition fetch bytes 1023 is not within 1024 and 104857600"},
		{"max partition fetch bytes above 100 MiB", nil, weir.WithMaxPartitionFetchBytes(100<<20 + 1), "WithMaxPartitionFetchBytes: kafka: invalid configuration: max partition fetch bytes 104857601 is not within"},
		{"fetch max wait negative", nil, weir.WithFetchMaxWait(-time.Second), "WithFetchMaxWait: kafka: invalid configuration: fetch max wait -1s is not within 1ms and 10s"},
		{"fetch max wait 11s", nil, weir.WithFetchMaxWait(11 * time.Second), "WithFetchMaxWait: kafka: invalid configuration: fetch max wait 11s is not within 1ms and 10s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if len(opts) == 0 || tc.opt != nil {
				opts = append(validBase(), opts...)
			}
			if tc.opt != nil {
				opts = append(opts, tc.opt)
			}
			_, err := weir.New(topo, opts...)
			require.ErrorIs(t, err, weir.ErrConfig)
			require.Contains(t, err.Error(), tc.want)
			require.Len(t, err.(interface{ Unwrap() []error }).Unwrap(), 1, "one problem: %v", err)
		})
	}
}

// Every bad option is reported in one error, each problem wrapping
// ErrConfig on a line of its own.
func TestNewReportsEveryProblemAtOnce(t *testing.T) {
	_, err := weir.New(nil,
		weir.WithSessionTimeout(-time.Second),
		weir.WithHeartbeatInterval(-time.Hour),
		weir.WithInstanceID("a b"),
		weir.WithStagingLimit(-5),
		weir.WithEpochInterval(0),
		weir.WithHTTP("nope"),
	)
	require.ErrorIs(t, err, weir.ErrConfig)
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined), "%T", err)
	for _, want := range []string{
		"nil topology",
		"WithBrokers: no brokers",
		"WithApplicationID: no application id",
		"WithSessionTimeout: -1s is not within 1s and 30m0s",
		"WithHeartbeatInterval: -1h0m0s is negative",
		`WithInstanceID: "a b" has " "`,
		"WithStagingLimit: -5 is negative",
		"WithEpochInterval: 0s is below 1ms",
		`WithHTTP: "nope" is not host:port`,
	} {
		require.Contains(t, err.Error(), want)
	}
	problems := 0
	for _, e := range flatten(err) {
		require.ErrorIs(t, e, weir.ErrConfig, "%v", e)
		problems++
	}
	require.Equal(t, 9, problems, "%v", err)
}

// flatten returns the errors an errors.Join holds (nested joins too).
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// The boundary values and the zero defaults are accepted: validation
// changes nothing for a valid configuration.
func TestNewAcceptsValidBounds(t *testing.T) {
	topo := wordCountTopology(t, "in", "out")
	for name, opts := range map[string][]weir.Option{
		"defaults":                     nil,
		"zero means default":           {weir.WithSessionTimeout(0), weir.WithHeartbeatInterval(0), weir.WithStagingLimit(0), weir.WithProgressReports(0)},
		"session 1s":                   {weir.WithSessionTimeout(time.Second), weir.WithHeartbeatInterval(300 * time.Millisecond)},
		"session 3s heartbeat 300ms":   {weir.WithSessionTimeout(3 * time.Second), weir.WithHeartbeatInterval(300 * time.Millisecond)},
		"session 30m":                  {weir.WithSessionTimeout(30 * time.Minute)},
		"heartbeat just below":         {weir.WithSessionTimeout(6 * time.Second), weir.WithHeartbeatInterval(6*time.Second - time.Millisecond)},
		"epoch 1ms":                    {weir.WithEpochInterval(time.Millisecond)},
		"epoch 1h":                     {weir.WithEpochInterval(time.Hour)},
		"staging 64":                   {weir.WithStagingLimit(64)},
		"cache off, 1 byte, 10 MiB":    {weir.WithCacheMaxBytes(0), weir.WithCacheMaxBytes(1), weir.WithCacheMaxBytes(10 << 20)},
		"instance id":                  {weir.WithInstanceID("host-1.a_b")},
		"replication -1, topic config": {weir.WithReplicationFactor(-1), weir.WithTopicConfig("retention.ms", "1")},
		"sinks":                        {weir.WithCreateSinkTopics(1, map[string]string{"cleanup.policy": "compact"})},
		"http":                         {weir.WithHTTP(":0"), weir.WithAdvertisedHTTP("host:8080")},
		"http advertised http://":      {weir.WithHTTP(":0"), weir.WithAdvertisedHTTP("http://host:8080")},
		"https, auth":                  {weir.WithHTTP(":0"), weir.WithHTTPTLS(&tls.Config{Certificates: aCert}), weir.WithAdvertisedHTTP("https://host:8080"), weir.WithHTTPAuth(admitAll)},
		"https, advertised host:port":  {weir.WithHTTP(":0"), weir.WithHTTPTLS(&tls.Config{GetCertificate: getCert}), weir.WithAdvertisedHTTP("host:8080")},
		"mutual tls":                   {weir.WithHTTP(":0"), weir.WithHTTPTLS(&tls.Config{Certificates: aCert, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: x509.NewCertPool()})},
		"micro-batch":                  {weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.ProcessingTime(time.Millisecond)})},
		"sasl":                         {weir.WithSASL("PLAIN", "u", "p"), weir.WithTLS(nil)},
		"nil options":                  {nil, weir.WithLogger(nil), weir.WithErrorHandler(nil), weir.WithStateListener(nil)},
		"kafka client zeros": {weir.WithCompression(""), weir.WithCompressionLevel(0), weir.WithLinger(0), weir.WithBatchSize(0),
			weir.WithMaxRequestSize(0), weir.WithFetchMinBytes(0), weir.WithMaxPartitionFetchBytes(0), weir.WithFetchMaxWait(0)},
		"kafka client lower bounds": {weir.WithCompression(weir.CompressionNone), weir.WithLinger(time.Millisecond), weir.WithBatchSize(1),
			weir.WithMaxRequestSize(1 << 20), weir.WithFetchMinBytes(1), weir.WithMaxPartitionFetchBytes(1 << 10), weir.WithFetchMaxWait(time.Millisecond)},
		"kafka client upper bounds": {weir.WithCompression(weir.CompressionZSTD), weir.WithCompressionLevel(22), weir.WithLinger(10 * time.Second),
			weir.WithBatchSize(100 << 20), weir.WithMaxRequestSize(100 << 20), weir.WithFetchMinBytes(100 << 20),
			weir.WithMaxPartitionFetchBytes(100 << 20), weir.WithFetchMaxWait(10 * time.Second)},
		"gzip 1, 9; zstd -131072": {weir.WithCompression(weir.CompressionGZIP), weir.WithCompressionLevel(1), weir.WithCompressionLevel(9),
			weir.WithCompression(weir.CompressionZSTD), weir.WithCompressionLevel(-131072)},
		"snappy, lz4": {weir.WithCompression(weir.CompressionSnappy), weir.WithCompression(weir.CompressionLZ4)},
	} {
		_, err := weir.New(topo, append(validBase(), opts...)...)
		require.NoError(t, err, name)
	}
}
