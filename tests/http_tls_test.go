package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// testCA is a certificate authority made in the test with crypto/x509.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue signs a certificate for cn, valid for 127.0.0.1, with the given
// extended key usages.
func (ca *testCA) issue(t *testing.T, cn string, usage ...x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// httpsClient trusts roots and presents certs.
func httpsClient(roots *x509.CertPool, certs ...tls.Certificate) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: 15 * time.Second, Transport: tr}
}

// fetch GETs url with an optional bearer token and decodes the JSON reply.
func fetch(t *testing.T, cl *http.Client, url, token string) (reply, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(body, &r), "reply to %s: %s", url, body)
	} else {
		r.Error = string(body)
	}
	return r, nil
}

// startHTTPSPair counts words with two instances serving HTTPS with
// server (and auth, if set) on the embedded broker, and returns their
// addresses and the counts.
func startHTTPSPair(t *testing.T, server *tls.Config, auth func(*http.Request) error) ([]string, map[string]int64) {
	t.Helper()
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	opts := []weir.Option{weir.WithHTTP("127.0.0.1:0"), weir.WithHTTPTLS(server)}
	if auth != nil {
		opts = append(opts, weir.WithHTTPAuth(auth))
	}
	insts := []*instance{startInstance(t, topo, env, appID, opts...), startInstance(t, topo, env, appID, opts...)}
	t.Cleanup(func() {
		for _, in := range insts {
			require.NoError(t, in.stop(t))
		}
	})
	want := map[string]int64{}
	produceLines(t, env, in, 0, 200, []string{"apple", "kiwi", "fig", "plum", "pear", "lime", "date", "sloe"}, want)
	waitForCounts(t, env, out, want)
	return httpAddrs(t, insts...), want
}

// lastReply prints the last reply of a loop when it fails.
type lastReply struct{ s string }

func (l *lastReply) String() string { return l.s }

// requireAnswersOverTLS asks every instance for every word until each
// answers its count, then checks that some answers were forwarded between
// the instances — over HTTPS, as the https:// addresses they advertise
// say.
func requireAnswersOverTLS(t *testing.T, cl *http.Client, token string, addrs []string, want map[string]int64) {
	t.Helper()
	last := &lastReply{}
	require.Eventually(t, func() bool {
		for _, addr := range addrs {
			for w, n := range want {
				r, err := fetch(t, cl, "https://"+addr+keyPath("counts", w), token)
				if err != nil || r.status != http.StatusOK || r.Value == nil || *r.Value != n {
					last.s = fmt.Sprintf("%s on %s: %v %d %s", w, addr, err, r.status, r.Error)
					return false
				}
			}
		}
		return true
	}, 60*time.Second, 100*time.Millisecond, "every instance answers every key over TLS; last: %s", last)
	forwarded := 0
	for _, addr := range addrs {
		for w := range want {
			r, err := fetch(t, cl, "https://"+addr+keyPath("counts", w), token)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.status, r.Error)
			require.True(t, strings.HasPrefix(r.ServedBy, "https://127.0.0.1:"), "advertised over https: %q", r.ServedBy)
			if r.ServedBy != "https://"+addr {
				forwarded++
			}
		}
	}
	require.Positive(t, forwarded, "some keys are answered by the other instance")
}

// requirePlainHTTPRefused: plain HTTP to a TLS server gets 400 from the
// server's TLS layer and never reaches the endpoints.
func requirePlainHTTPRefused(t *testing.T, addr string) {
	t.Helper()
	status, body := get(t, addr, keyPath("counts", "apple"))
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(body), "Client sent an HTTP request to an HTTPS server")
}

// Two instances serve HTTPS with a server certificate only: a client that
// trusts the CA gets every key from either instance, forwarded between
// them over TLS; one that does not trust it, and plain HTTP, are refused.
func TestHTTPServesTLS(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	ca := newTestCA(t, "weir-test-http-ca")
	inst := ca.issue(t, "weir-instance", x509.ExtKeyUsageServerAuth)
	server := &tls.Config{Certificates: []tls.Certificate{inst}, RootCAs: ca.pool, MinVersion: tls.VersionTLS12}
	addrs, want := startHTTPSPair(t, server, nil)

	requireAnswersOverTLS(t, httpsClient(ca.pool), "", addrs, want)
	_, err := fetch(t, httpsClient(nil), "https://"+addrs[0]+"/healthz", "")
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	requirePlainHTTPRefused(t, addrs[1])
}

// Two instances serve HTTPS requiring client certificates (mutual TLS),
// and an auth hook admits a request with the bearer token from a known
// certificate: queries are forwarded between the instances with their own
// certificate and the original's token; a client without a certificate, or
// with one of another CA, is refused in the handshake; the hook answers
// 401 without the token and 403 for a certificate it does not admit, on
// every endpoint, before any store is read; plain HTTP is refused.
func TestHTTPServesMutualTLSAndAuthenticates(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	ca := newTestCA(t, "weir-test-http-ca")
	inst := ca.issue(t, "weir-instance", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	reader := ca.issue(t, "reader", x509.ExtKeyUsageClientAuth)
	intruder := ca.issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	stranger := newTestCA(t, "another-ca").issue(t, "reader", x509.ExtKeyUsageClientAuth)
	server := &tls.Config{
		Certificates: []tls.Certificate{inst}, RootCAs: ca.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool, MinVersion: tls.VersionTLS12,
	}
	const token = "s3cret"
	auth := func(r *http.Request) error {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return errors.New("no client certificate") // never: the handshake requires one
		}
		if r.Header.Get("Authorization") != "Bearer "+token {
			return errors.New("no valid bearer token")
		}
		switch cn := r.TLS.PeerCertificates[0].Subject.CommonName; cn {
		case "weir-instance", "reader":
			return nil
		default:
			return fmt.Errorf("%w: %s may not query", weir.ErrHTTPForbidden, cn)
		}
	}
	addrs, want := startHTTPSPair(t, server, auth)

	// Admitted: forwarded queries carry the instance's certificate and the
	// reader's token.
	requireAnswersOverTLS(t, httpsClient(ca.pool, reader), token, addrs, want)

	// Refused in the TLS handshake: no reply at all. (The client's error
	// varies: under TLS 1.3 the server's alert comes after the client's
	// half of the handshake, so it may read "remote error: tls: ..." or
	// that the HTTP/2 connection could not be established.)
	for name, cl := range map[string]*http.Client{
		"no client certificate": httpsClient(ca.pool),
		"another CA":            httpsClient(ca.pool, stranger),
	} {
		r, err := fetch(t, cl, "https://"+addrs[0]+keyPath("counts", "apple"), token)
		require.Error(t, err, "%s: got a reply: %d %s", name, r.status, r.Error)
	}

	// Refused by the hook, on every endpoint, with the hook's reason.
	for _, path := range []string{keyPath("counts", "apple"), "/stores/counts/keys", "/metrics", "/healthz"} {
		r, err := fetch(t, httpsClient(ca.pool, reader), "https://"+addrs[1]+path, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, r.status, path)
		require.Equal(t, "query: unauthorized: no valid bearer token", r.Error, path)
		require.Nil(t, r.Value, path)
		require.Empty(t, r.Entries, path)

		r, err = fetch(t, httpsClient(ca.pool, intruder), "https://"+addrs[1]+path, token)
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, r.status, path)
		require.Equal(t, "query: forbidden: intruder may not query", r.Error, path)
		require.Nil(t, r.Value, path)
	}
	requirePlainHTTPRefused(t, addrs[0])
}
