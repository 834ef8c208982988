package tests

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/topology"
)

// The secured tests run weir against the secured broker of
// scripts/kafka/start-secure.sh (SASL_SSL, SSL with client certificates,
// the StandardAuthorizer with no ACL allowing everything). They read its
// env-style lines from the environment and skip when they are not set:
//
//	set -a; source scripts/kafka/run-secure/secure.env; set +a
//	go test -count=1 -run TestSecured -v ./tests
//
// The verifier (input producer, output reader, ACL and user admin) is the
// super user admin through franz-go, not weir's sarama clients.

// securedBroker is the secured broker and its credentials.
type securedBroker struct {
	saslBrokers, sslBrokers  []string
	tlsBrokers               []string // SSL without client certificates: User:ANONYMOUS
	ca                       *x509.CertPool
	caFile                   string
	cert                     tls.Certificate
	expired                  tls.Certificate // signed by the CA, expired 30 days ago
	adminUser, adminPassword string
	user, password           string // a PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 user with no ACLs
}

func secured(t *testing.T) *securedBroker {
	t.Helper()
	env := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			t.Skipf("%s not set: start scripts/kafka/start-secure.sh and source its run-secure/secure.env", k)
		}
		return v
	}
	s := &securedBroker{
		saslBrokers:   strings.Split(env("KAFKA_SASL_SSL_BROKERS"), ","),
		sslBrokers:    strings.Split(env("KAFKA_SSL_BROKERS"), ","),
		tlsBrokers:    strings.Split(env("KAFKA_TLS_BROKERS"), ","),
		caFile:        env("KAFKA_TLS_CA"),
		adminUser:     env("KAFKA_ADMIN_USER"),
		adminPassword: env("KAFKA_ADMIN_PASSWORD"),
		user:          env("KAFKA_SASL_USER"),
		password:      env("KAFKA_SASL_PASSWORD"),
	}
	pem, err := os.ReadFile(s.caFile)
	require.NoError(t, err)
	s.ca = x509.NewCertPool()
	require.True(t, s.ca.AppendCertsFromPEM(pem), "no certificate in %s", s.caFile)
	s.cert, err = tls.LoadX509KeyPair(env("KAFKA_TLS_CERT"), env("KAFKA_TLS_KEY"))
	require.NoError(t, err)
	s.expired, err = tls.LoadX509KeyPair(env("KAFKA_TLS_EXPIRED_CERT"), env("KAFKA_TLS_EXPIRED_KEY"))
	require.NoError(t, err)
	return s
}

// tlsConfig verifies the broker's certificate with the test CA.
func (s *securedBroker) tlsConfig() *tls.Config {
	return &tls.Config{RootCAs: s.ca, MinVersion: tls.VersionTLS12}
}

// mtlsConfig also presents the client certificate (principal
// User:weir-client).
func (s *securedBroker) mtlsConfig() *tls.Config {
	c := s.tlsConfig()
	c.Certificates = []tls.Certificate{s.cert}
	return c
}

// admin is the verifier's environment: the super user over SASL_SSL with
// SCRAM-SHA-512.
func (s *securedBroker) admin() *kafkatest.Env {
	return &kafkatest.Env{Name: "secured", Brokers: s.saslBrokers, ClientOpts: []kgo.Opt{
		kgo.DialTLSConfig(s.tlsConfig()),
		kgo.SASL(scram.Auth{User: s.adminUser, Pass: s.adminPassword}.AsSha512Mechanism()),
	}}
}

func (s *securedBroker) adminClient(t *testing.T) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.saslBrokers...)}, s.admin().ClientOpts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newSCRAMUser creates a user with a random name and password for
// mechanism (kmsg: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512) through the admin API
// (AlterUserScramCredentials), deleted when the test ends.
func (s *securedBroker) newSCRAMUser(t *testing.T, use512 bool) (user, password string) {
	t.Helper()
	user, password = "weir-test-"+randomSuffix(), randomSuffix()+randomSuffix()
	mech, hash, size := int8(1), sha256.New, sha256.Size
	if use512 {
		mech, hash, size = 2, sha512.New, sha512.Size
	}
	salt := []byte(randomSuffix())
	salted, err := pbkdf2.Key(hash, password, salt, 4096, size)
	require.NoError(t, err)
	cl := s.adminClient(t)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = user, mech, 4096, salt, salted
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(adminCtx(t), cl)
	require.NoError(t, err)
	for _, r := range resp.Results {
		require.NoError(t, kerr.ErrorForCode(r.ErrorCode), "create SCRAM user %s", r.User)
	}
	t.Cleanup(func() {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.saslBrokers...)}, s.admin().ClientOpts...)...)
		if err != nil {
			return
		}
		defer cl.Close()
		del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		del.Deletions = append(del.Deletions, d)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = del.RequestWith(ctx, cl)
	})
	return user, password
}

// aclEntry is one ACL allowing an operation on a resource (to the
// application's principal, from any host).
type aclEntry struct {
	resource kmsg.ACLResourceType
	name     string
	prefixed bool
	op       kmsg.ACLOperation
}

func (a aclEntry) String() string {
	pattern := "literal"
	if a.prefixed {
		pattern = "prefixed"
	}
	return fmt.Sprintf("%s %s %q: %s", a.resource, pattern, a.name, a.op)
}

// requiredACLs is the minimal set of ACLs an application with id appID
// that reads inputs and writes outputs needs (the list of
// docs/security.md); TestSecuredRefusals removes each in turn:
//
//   - topics prefixed "<appID>-" (repartition and changelog topics):
//     Create, Read, Write, DescribeConfigs (the cleanup.policy of an
//     existing changelog is checked at start);
//   - the group <appID>: Read;
//   - the input topics: Read;
//   - the output topics: Write;
//   - exactly-once only: transactional ids prefixed "<appID>-": Write.
//
// Describe is implied by Read and Write, and no cluster ACL is needed:
// Kafka 3.0+ implies IdempotentWrite from Write on a topic or a
// transactional id (KIP-679).
func requiredACLs(appID string, exactlyOnce bool, inputs, outputs []string) []aclEntry {
	var out []aclEntry
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribeConfigs} {
		out = append(out, aclEntry{kmsg.ACLResourceTypeTopic, appID + "-", true, op})
	}
	out = append(out, aclEntry{kmsg.ACLResourceTypeGroup, appID, false, kmsg.ACLOperationRead})
	for _, in := range inputs {
		out = append(out, aclEntry{kmsg.ACLResourceTypeTopic, in, false, kmsg.ACLOperationRead})
	}
	for _, o := range outputs {
		out = append(out, aclEntry{kmsg.ACLResourceTypeTopic, o, false, kmsg.ACLOperationWrite})
	}
	if exactlyOnce {
		out = append(out, aclEntry{kmsg.ACLResourceTypeTransactionalId, appID + "-", true, kmsg.ACLOperationWrite})
	}
	return out
}

// grant creates the ACLs for principal ("User:<name>") and waits until the
// broker's authorizer has them; they are deleted when the test ends.
func (s *securedBroker) grant(t *testing.T, principal string, acls []aclEntry) {
	t.Helper()
	cl := s.adminClient(t)
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.Principal, c.Host = a.resource, a.name, principal, "*"
		c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		if a.prefixed {
			c.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
		}
		c.Operation, c.PermissionType = a.op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(adminCtx(t), cl)
	require.NoError(t, err)
	for i, r := range resp.Results {
		require.NoError(t, kerr.ErrorForCode(r.ErrorCode), "create ACL %v", acls[i])
	}
	t.Cleanup(func() { s.revokeAll(principal) })
	// Describe asks the broker's own authorizer: once it lists them all,
	// requests are checked against them.
	require.Eventually(t, func() bool {
		d := kmsg.NewPtrDescribeACLsRequest()
		d.ResourceType = kmsg.ACLResourceTypeAny
		d.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
		d.Principal = kmsg.StringPtr(principal)
		d.Operation = kmsg.ACLOperationAny
		d.PermissionType = kmsg.ACLPermissionTypeAny
		dr, err := d.RequestWith(adminCtx(t), cl)
		if err != nil || dr.ErrorCode != 0 {
			return false
		}
		n := 0
		for _, r := range dr.Resources {
			n += len(r.ACLs)
		}
		return n >= len(acls)
	}, 20*time.Second, 50*time.Millisecond, "the ACLs of %s never showed", principal)
}

// revokeAll deletes every ACL of principal.
func (s *securedBroker) revokeAll(principal string) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.saslBrokers...)}, s.admin().ClientOpts...)...)
	if err != nil {
		return
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType = kmsg.ACLResourceTypeAny
	f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	f.Principal = kmsg.StringPtr(principal)
	f.Operation = kmsg.ACLOperationAny
	f.PermissionType = kmsg.ACLPermissionTypeAny
	req.Filters = append(req.Filters, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = req.RequestWith(ctx, cl)
}

// securedRun is one word count through weir's public options.
type securedRun struct {
	brokers   []string
	principal string        // "User:<name>", granted requiredACLs
	security  []weir.Option // WithTLS, WithSASL
	micro     bool
	exactly   bool
}

func (r securedRun) options() []weir.Option {
	opts := slices.Clone(r.security)
	if r.exactly {
		opts = append(opts, weir.WithGuarantee(weir.ExactlyOnce))
	}
	if r.micro {
		opts = append(opts, weir.WithMicroBatch(microbatch.Config{MaxRecordsPerBatch: 100}))
	}
	return opts
}

// runSecuredWordCount counts words with one instance, adds a second one
// (a standby, serving queries), stops the first — the second restores its
// partitions from the changelog or its standby copies and answers a query
// through the group's description — and checks that every word's counts
// are 1, 2, ..., n on the output. Under at-least-once a count may also come
// more than once or go beyond n (input processed again after the
// hand-over: what the guarantee allows), but none of 1..n may be missing.
func runSecuredWordCount(t *testing.T, s *securedBroker, r securedRun) {
	admin := s.admin()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, admin, in, 4)
	kafkatest.CreateTopic(t, admin, out, 4)
	appID := "secured-" + randomSuffix()
	s.grant(t, r.principal, requiredACLs(appID, r.exactly, []string{in}, []string{out}))
	topo := wordCountTopology(t, in, out)
	appEnv := &kafkatest.Env{Name: "secured", Brokers: r.brokers}
	vocab := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	want := map[string]int64{}

	a := startInstance(t, topo, appEnv, appID, r.options()...)
	produceLines(t, admin, in, 0, 100, vocab, want)
	waitForSecuredCounts(t, admin, out, want, r.exactly, "one instance")

	b := startInstance(t, topo, appEnv, appID, append(r.options(), weir.WithStandbyReplicas(1), weir.WithHTTP("127.0.0.1:0"))...)
	produceLines(t, admin, in, 100, 100, vocab, want)
	waitForSecuredCounts(t, admin, out, want, r.exactly, "a second instance joined")
	require.NoError(t, a.stop(t))

	produceLines(t, admin, in, 200, 100, vocab, want)
	seen := waitForSecuredCounts(t, admin, out, want, r.exactly, "the first instance stopped")
	addr := httpAddrs(t, b)[0]
	last := map[string]int64{} // the state the output shows: want, unless at-least-once counted again
	for w := range want {
		last[w] = seen[w][len(seen[w])-1]
	}
	require.Eventually(t, func() bool { return answersEverywhere(t, []string{addr}, last) },
		30*time.Second, 100*time.Millisecond, "queries on the remaining instance")
	require.NoError(t, b.stop(t))
	if r.exactly {
		requireExact(t, want, seen)
	} else {
		requireNoneLost(t, want, seen)
	}
}

// requireNoneLost checks that every count 1..n of every word is on the
// output (the at-least-once promise), and logs how many came again.
func requireNoneLost(t *testing.T, want map[string]int64, seen map[string][]int64) {
	t.Helper()
	again := 0
	for w, n := range want {
		if missing := missingCounts(seen[w], n); len(missing) > 0 {
			t.Fatalf("word %s: counts %v of 1..%d are not on the output (outputs: %v)", w, missing, n, seen[w])
		}
		again += len(seen[w]) - int(n)
	}
	if again > 0 {
		t.Logf("at-least-once: %d outputs beyond one per occurrence (input processed again)", again)
	}
}

// missingCounts returns the counts of 1..n that s does not hold.
func missingCounts(s []int64, n int64) []int64 {
	have := make(map[int64]bool, len(s))
	for _, c := range s {
		have[c] = true
	}
	var missing []int64
	for c := int64(1); c <= n; c++ {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	return missing
}

// waitForSecuredCounts waits until every word's last count on the output
// is its wanted count (at-least-once: until every count up to it is
// there), like waitForCounts, and when that never comes
// says, word by word, what the output holds: the last count and the
// first place where the counts stop being 1, 2, 3, ... (a repeat: state
// that went back; a gap: lost input; beyond the wanted count: input
// processed twice).
func waitForSecuredCounts(t *testing.T, env *kafkatest.Env, topic string, want map[string]int64, exactly bool, phase string) map[string][]int64 {
	t.Helper()
	var seen map[string][]int64
	deadline := time.Now().Add(90 * time.Second)
	for {
		seen = countsSeen(t, env, topic)
		done := true
		for w, n := range want {
			s := seen[w]
			switch {
			case exactly && (len(s) == 0 || s[len(s)-1] != n):
				done = false
			case !exactly && len(missingCounts(s, n)) > 0:
				done = false
			}
		}
		if done {
			return seen
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, w := range slices.Sorted(maps.Keys(want)) {
		s, n := seen[w], want[w]
		var last int64
		if len(s) > 0 {
			last = s[len(s)-1]
		}
		irregular := "none"
		for i, c := range s {
			if c != int64(i+1) {
				irregular = fmt.Sprintf("output %d is %d (around it: %v)", i+1, c, s[max(0, i-3):min(len(s), i+4)])
				break
			}
		}
		t.Logf("%s: word %s: want %d, %d outputs, last %d, first irregular: %s", phase, w, n, len(s), last, irregular)
	}
	t.Fatalf("%s: the final counts never appeared", phase)
	return nil
}

// TestSecuredWordCount runs word count with exactly the documented ACLs,
// in both modes under both guarantees over SASL_SSL with SCRAM-SHA-512,
// and over SCRAM-SHA-256, PLAIN, mutual TLS and server-verified TLS (the
// listener that asks for no client certificate: the principal is
// User:ANONYMOUS, granted the same set).
func TestSecuredWordCount(t *testing.T) {
	s := secured(t)
	scram512 := func(t *testing.T) (string, []weir.Option) {
		user, pw := s.newSCRAMUser(t, true)
		return "User:" + user, []weir.Option{weir.WithTLS(s.tlsConfig()), weir.WithSASL("SCRAM-SHA-512", user, pw)}
	}
	for _, tc := range []struct {
		name         string
		micro, exact bool
		brokers      []string
		security     func(t *testing.T) (principal string, opts []weir.Option)
	}{
		{"SCRAM-SHA-512/continuous/exactly-once", false, true, s.saslBrokers, scram512},
		{"SCRAM-SHA-512/continuous/at-least-once", false, false, s.saslBrokers, scram512},
		{"SCRAM-SHA-512/micro-batch/exactly-once", true, true, s.saslBrokers, scram512},
		{"SCRAM-SHA-512/micro-batch/at-least-once", true, false, s.saslBrokers, scram512},
		{"SCRAM-SHA-256/continuous/exactly-once", false, true, s.saslBrokers, func(t *testing.T) (string, []weir.Option) {
			user, pw := s.newSCRAMUser(t, false)
			return "User:" + user, []weir.Option{weir.WithTLS(s.tlsConfig()), weir.WithSASL("SCRAM-SHA-256", user, pw)}
		}},
		{"PLAIN/micro-batch/exactly-once", true, true, s.saslBrokers, func(*testing.T) (string, []weir.Option) {
			return "User:" + s.user, []weir.Option{weir.WithTLS(s.tlsConfig()), weir.WithSASL("PLAIN", s.user, s.password)}
		}},
		{"mTLS/continuous/exactly-once", false, true, s.sslBrokers, func(*testing.T) (string, []weir.Option) {
			return "User:weir-client", []weir.Option{weir.WithTLS(s.mtlsConfig())}
		}},
		{"TLS/micro-batch/exactly-once", true, true, s.tlsBrokers, func(*testing.T) (string, []weir.Option) {
			return "User:ANONYMOUS", []weir.Option{weir.WithTLS(s.tlsConfig())}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			principal, opts := tc.security(t)
			runSecuredWordCount(t, s, securedRun{
				brokers: tc.brokers, principal: principal, security: opts, micro: tc.micro, exactly: tc.exact,
			})
		})
	}
}

// runUntilError runs a fresh instance until Run returns, at most limit: a
// refusal must stop it, not leave it retrying.
func runUntilError(t *testing.T, topo *topology.Topology, brokers []string, appID string, limit time.Duration, opts ...weir.Option) error {
	t.Helper()
	app, err := weir.New(topo, append(baseOptions(t, &kafkatest.Env{Brokers: brokers}, appID), opts...)...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	start := time.Now()
	err = app.Run(ctx)
	require.Error(t, err, "Run returned nil")
	require.Less(t, time.Since(start), limit, "Run did not stop by itself within %v: %v", limit, err)
	return err
}

// TestSecuredRefusals: a wrong password, an unknown CA, no or an expired
// client certificate on the mutual-TLS listener, and each missing
// ACL of the minimal set stop Run at start with an error naming what was
// refused, rather than a hang or a retry loop.
func TestSecuredRefusals(t *testing.T) {
	s := secured(t)
	admin := s.admin()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, admin, in, 4)
	kafkatest.CreateTopic(t, admin, out, 4)
	produceLines(t, admin, in, 0, 20, []string{"a", "b"}, map[string]int64{})
	topo := wordCountTopology(t, in, out)
	user, pw := s.newSCRAMUser(t, true)
	const limit = 60 * time.Second

	t.Run("wrong password", func(t *testing.T) {
		err := runUntilError(t, topo, s.saslBrokers, "secured-"+randomSuffix(), limit,
			weir.WithTLS(s.tlsConfig()), weir.WithSASL("SCRAM-SHA-512", user, "wrong"))
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "invalid credentials with SASL mechanism SCRAM-SHA-512")
	})
	t.Run("unknown CA", func(t *testing.T) {
		err := runUntilError(t, topo, s.saslBrokers, "secured-"+randomSuffix(), limit,
			weir.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}), weir.WithSASL("SCRAM-SHA-512", user, pw))
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "certificate signed by unknown authority")
	})
	t.Run("no client certificate", func(t *testing.T) {
		err := runUntilError(t, topo, s.sslBrokers, "secured-"+randomSuffix(), limit, weir.WithTLS(s.tlsConfig()))
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "tls: bad certificate")
	})
	t.Run("expired client certificate", func(t *testing.T) {
		cfg := s.tlsConfig()
		cfg.Certificates = []tls.Certificate{s.expired}
		err := runUntilError(t, topo, s.sslBrokers, "secured-"+randomSuffix(), limit, weir.WithTLS(cfg))
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "remote error: tls: unknown certificate")
	})

	opName := map[kmsg.ACLOperation]string{
		kmsg.ACLOperationCreate: "Create", kmsg.ACLOperationRead: "Read", kmsg.ACLOperationWrite: "Write",
		kmsg.ACLOperationDescribeConfigs: "DescribeConfigs",
	}
	for i := range requiredACLs("app", true, []string{in}, []string{out}) {
		appID := "secured-" + randomSuffix()
		acls := requiredACLs(appID, true, []string{in}, []string{out})
		missing := acls[i]
		acls = slices.Delete(acls, i, i+1)
		t.Run("missing "+missing.String(), func(t *testing.T) {
			// The changelog exists, as at a restart: its cleanup.policy is
			// checked (DescribeConfigs) and the repartition topic is created.
			kafkatest.CreateTopic(t, admin, appID+"-counts-changelog", 4, map[string]string{"cleanup.policy": "compact"})
			u, p := s.newSCRAMUser(t, true)
			s.grant(t, "User:"+u, acls)
			err := runUntilError(t, topo, s.saslBrokers, appID, limit,
				weir.WithTLS(s.tlsConfig()), weir.WithSASL("SCRAM-SHA-512", u, p), weir.WithGuarantee(weir.ExactlyOnce))
			t.Logf("Run: %v", err)
			require.ErrorContains(t, err, "not authorized")
			require.ErrorContains(t, err, missing.name, "the error names the resource")
			require.ErrorContains(t, err, "an ACL granting "+opName[missing.op], "the error names the operation")
		})
	}
}
