package kafka_test

// Experiments on Kafka 4's broker-side group protocols, the evidence for
// docs/kafka.md's "Kafka 4's group protocols": can weir's co-partitioning
// and its standby and warm-up placement run on a KIP-848 consumer group
// (this file) or on a KIP-1071 streams group (kip848_streams_test.go)?
// The broker experiments need a real Kafka 4 broker (KAFKA_BROKERS) and
// are skipped without it; their topics and groups are named "kip848-…".
// They log what the broker answers and assert the findings docs/kafka.md
// builds on (co-partitioning under "range" and not under "uniform"; one
// active and one standby per task, apart), so that a broker that
// behaves otherwise fails them.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkatest"
)

// kip848Env returns the real broker of KAFKA_BROKERS, or skips the test.
func kip848Env(t *testing.T) *kafkatest.Env {
	t.Helper()
	brokers := kafkatest.RealBrokers()
	if len(brokers) == 0 {
		t.Skip("a Kafka 4 broker experiment: set KAFKA_BROKERS")
	}
	return &kafkatest.Env{Name: "kafka", Brokers: brokers}
}

// kip848Name returns "kip848-<what>-<random>", unique to the run.
func kip848Name(what string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "kip848-" + what + "-" + hex.EncodeToString(b)
}

// kip848Admin returns a client without a group, for raw requests.
func kip848Admin(t *testing.T, env *kafkatest.Env) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.ClientID("weir-kip848"),
		kgo.RequestTimeoutOverhead(30*time.Second)) // the shared broker is slow at times
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// kip848Ctx returns a context bounded by 90 s and the test's end: on
// a loaded broker a settle of a KIP-848 group takes 5-13 s, two or
// three heartbeat intervals (5 s at least, the broker's floor).
func kip848Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// kip848SetGroupConfigs sets dynamic group configs (config resource
// GROUP) with IncrementalAlterConfigs; it returns the broker's error.
func kip848SetGroupConfigs(ctx context.Context, cl *kgo.Client, group string, configs map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("%w: %s", err, msg)
		}
	}
	return nil
}

// kip848DescribeConfigs returns the configs of one resource whose names
// start with one of prefixes.
func kip848DescribeConfigs(ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, prefixes ...string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, err
		}
		for _, c := range r.Configs {
			for _, p := range prefixes {
				if strings.HasPrefix(c.Name, p) {
					v := "null"
					if c.Value != nil {
						v = *c.Value
					}
					out[c.Name] = v
				}
			}
		}
	}
	return out, nil
}

// kip848Create creates a topic of n partitions, deleted at the test's end.
func kip848Create(t *testing.T, env *kafkatest.Env, name string, n int32) {
	t.Helper()
	kafkatest.CreateTopic(t, env, name, n)
}

// KIP-848's heartbeat carries no user data: of its fields only the
// member's identity, subscription, owned partitions and the name of a
// broker-side assignor reach the coordinator. The classic JoinGroup
// carries each protocol's opaque metadata, which is where weir's
// subscription user data (lags, standbys held, process id) travels. So
// on a consumer group the broker's assignor cannot see what weir's
// standby and warm-up placement decides from.
func TestKIP848HeartbeatCarriesNoUserData(t *testing.T) {
	bytesFields := func(v any) []string {
		var out []string
		var walk func(reflect.Type, string)
		walk = func(ty reflect.Type, path string) {
			for i := range ty.NumField() {
				f := ty.Field(i)
				if f.Name == "UnknownTags" {
					continue
				}
				ft := f.Type
				if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
					walk(ft.Elem(), path+f.Name+"[].")
					continue
				}
				if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8 {
					out = append(out, path+f.Name)
				}
			}
		}
		walk(reflect.TypeOf(v), "")
		return out
	}
	var fields []string
	for i := range reflect.TypeFor[kmsg.ConsumerGroupHeartbeatRequest]().NumField() {
		fields = append(fields, reflect.TypeFor[kmsg.ConsumerGroupHeartbeatRequest]().Field(i).Name)
	}
	t.Logf("ConsumerGroupHeartbeatRequest (v0-v%d) fields: %s", kmsg.NewPtrConsumerGroupHeartbeatRequest().MaxVersion(), strings.Join(fields, ", "))
	require.Empty(t, bytesFields(kmsg.ConsumerGroupHeartbeatRequest{}), "KIP-848 heartbeat has an opaque bytes field")
	require.Empty(t, bytesFields(kmsg.ConsumerGroupHeartbeatResponse{}), "KIP-848 heartbeat response has an opaque bytes field")
	require.Equal(t, []string{"Protocols[].Metadata"}, bytesFields(kmsg.JoinGroupRequest{}),
		"the classic JoinGroup carries the subscription's user data")
	// The streams heartbeat (KIP-1071) has no opaque bytes either, but
	// names the tasks' changelog offsets, from which the broker computes
	// lags for standby and warm-up placement.
	require.Empty(t, bytesFields(kmsg.StreamsGroupHeartbeatRequest{}))
	req := reflect.TypeFor[kmsg.StreamsGroupHeartbeatRequest]()
	for _, name := range []string{"TaskOffsets", "TaskEndOffsets", "StandbyTasks", "WarmupTasks", "ProcessID", "UserEndpoint"} {
		_, ok := req.FieldByName(name)
		require.True(t, ok, "StreamsGroupHeartbeatRequest.%s", name)
	}
}

// TestKIP848BrokerOffersGroupProtocols logs which group protocols the
// broker offers (ApiVersions) and its group settings (DescribeConfigs).
func TestKIP848BrokerOffersGroupProtocols(t *testing.T) {
	env := kip848Env(t)
	cl := kip848Admin(t, env)
	ctx := kip848Ctx(t)

	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	offered := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		offered[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for _, k := range []int16{11, 68, 69, 88, 89} {
		name := kmsg.NameForKey(k)
		if v, ok := offered[k]; ok {
			t.Logf("ApiVersions: %s (key %d) v%d-v%d", name, k, v[0], v[1])
		} else {
			t.Logf("ApiVersions: %s (key %d) not offered", name, k)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		t.Logf("ApiVersions: finalized feature %s=%d", f.Name, f.MaxVersionLevel)
	}
	require.Contains(t, offered, int16(68), "the broker offers no ConsumerGroupHeartbeat")
	require.GreaterOrEqual(t, offered[68][1], int16(1), "KIP-848 v1 (Kafka 4.0+)")

	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NotEmpty(t, md.Brokers)
	bcfg, err := kip848DescribeConfigs(ctx, cl, kmsg.ConfigResourceTypeBroker, fmt.Sprint(md.Brokers[0].NodeID),
		"group.coordinator.rebalance.protocols", "group.consumer.", "group.streams.", "unstable.")
	require.NoError(t, err)
	for _, k := range sortedKeys(bcfg) {
		t.Logf("broker config %s=%s", k, bcfg[k])
	}
	gcfg, err := kip848DescribeConfigs(ctx, cl, kmsg.ConfigResourceTypeGroupConfig, kip848Name("probe"), "")
	require.NoError(t, err)
	for _, k := range sortedKeys(gcfg) {
		t.Logf("group config %s=%s", k, gcfg[k])
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kip848Member is one consumer of the experiment: a kgo client in a
// KIP-848 group, and the partitions its callbacks say it owns.
type kip848Member struct {
	name string
	cl   *kgo.Client

	mu    sync.Mutex
	owned map[string][]int32
}

func (m *kip848Member) assigned(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for tp, ps := range tps {
		m.owned[tp] = append(m.owned[tp], ps...)
		slices.Sort(m.owned[tp])
	}
}

func (m *kip848Member) revoked(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for tp, ps := range tps {
		m.owned[tp] = slices.DeleteFunc(m.owned[tp], func(p int32) bool { return slices.Contains(ps, p) })
	}
}

func (m *kip848Member) partitions(topic string) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned[topic])
}

// TestKIP848ConsumerGroupCoPartitioning runs 3-4 kgo members of a KIP-848
// consumer group (ServerSideBalancer) over two topics of 6 partitions,
// under the broker's "range" assignor (kgo's RangeBalancer asks for it)
// and its "uniform" assignor (kgo's sticky balancers ask for it); members
// join and leave. After each settle it records, per member, its
// partitions of A and of B: co-partitioned when they are equal, as
// weir's assignor guarantees for the source topics of a sub-topology.
//
// Long: each settle waits out heartbeat intervals of 5 s, the broker's
// floor (group.consumer.min.heartbeat.interval.ms); about 30 s in all.
func TestKIP848ConsumerGroupCoPartitioning(t *testing.T) {
	env := kip848Env(t)
	kafkatest.Long(t)
	for _, tc := range []struct {
		assignor string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"uniform", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.assignor, func(t *testing.T) {
			t.Parallel()
			steps := kip848CoPartitionRun(t, env, tc.assignor, tc.balancer)
			copart := 0
			for _, s := range steps {
				if s.coPartitioned {
					copart++
				}
			}
			t.Logf("%s: co-partitioned after %d of %d settles", tc.assignor, copart, len(steps))
			// The broker's range assignor gives each member the same
			// partition numbers of every topic of equal partition count
			// that all members subscribe to. The uniform assignor
			// balances partitions over all topics together:
			// co-partitioning is left to chance (logged above, not
			// asserted, since chance may give it).
			if tc.assignor == "range" {
				require.Equal(t, len(steps), copart, "range broke co-partitioning")
			}
		})
	}
}

type kip848Step struct {
	what          string
	coPartitioned bool
}

func kip848CoPartitionRun(t *testing.T, env *kafkatest.Env, assignor string, balancer kgo.GroupBalancer) []kip848Step {
	ctx := kip848Ctx(t)
	admin := kip848Admin(t, env)
	a, b := kip848Name(assignor+"-a"), kip848Name(assignor+"-b")
	kip848Create(t, env, a, 6)
	kip848Create(t, env, b, 6)
	group := kip848Name("group-" + assignor)
	// The heartbeat interval is the floor of each reconciliation step;
	// the broker's group.consumer.min.heartbeat.interval.ms bounds it.
	if err := kip848SetGroupConfigs(ctx, admin, group, map[string]string{
		"consumer.heartbeat.interval.ms": "1000",
		"consumer.session.timeout.ms":    "10000",
	}); err != nil {
		t.Logf("group config %s: %v (the broker's defaults stay)", group, err)
	}

	members := map[string]*kip848Member{}
	start := func(name string) {
		m := &kip848Member{name: name, owned: map[string][]int32{}}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(env.Brokers...),
			kgo.ClientID("weir-kip848-"+name),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(a, b),
			kgo.Balancers(balancer),
			kgo.ServerSideBalancer(),
			kgo.OnPartitionsAssigned(m.assigned),
			kgo.OnPartitionsRevoked(m.revoked),
			kgo.OnPartitionsLost(m.revoked),
		)
		require.NoError(t, err)
		m.cl = cl
		members[name] = m
		go func() { // poll so that kgo runs its callbacks
			for {
				f := cl.PollFetches(ctx)
				if f.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
		t.Cleanup(cl.Close)
	}
	stop := func(name string) {
		members[name].cl.Close() // leaves the group: heartbeat with epoch -1
		delete(members, name)
	}

	var steps []kip848Step
	var prevOwner map[int32]string
	settle := func(what string) {
		began := time.Now()
		for {
			ok, why := kip848Settled(ctx, admin, group, members, a, b)
			if ok {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %s never settled: %s", assignor, what, why)
			}
			time.Sleep(100 * time.Millisecond)
		}
		co := true
		var rows []string
		owner := map[int32]string{}
		moved := 0 // partitions of A taken from a member that stayed
		for _, name := range sortedKeys(members) {
			m := members[name]
			pa, pb := m.partitions(a), m.partitions(b)
			for _, p := range pa {
				owner[p] = name
				if prev, ok := prevOwner[p]; ok && prev != name && members[prev] != nil {
					moved++
				}
			}
			same := slices.Equal(pa, pb)
			co = co && same
			rows = append(rows, fmt.Sprintf("%s A=%v B=%v co=%v", name, pa, pb, same))
		}
		t.Logf("%s: %-14s settled in %5dms, %d of A moved between members that stayed: %s",
			assignor, what, time.Since(began).Milliseconds(), moved, strings.Join(rows, "; "))
		prevOwner = owner
		steps = append(steps, kip848Step{what: what, coPartitioned: co})
	}

	start("m1")
	start("m2")
	start("m3")
	settle("m1 m2 m3 join")
	start("m4")
	settle("m4 joins")
	stop("m2")
	settle("m2 leaves")
	return steps
}

// kip848Settled reports whether the group is Stable with the members
// given, each at the group's epoch, owning its target assignment, the
// twelve partitions of a and b each owned once, and each member's kgo
// callbacks agreeing with the broker; why says what is still missing.
func kip848Settled(ctx context.Context, cl *kgo.Client, group string, members map[string]*kip848Member, a, b string) (bool, string) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, err.Error()
	}
	if len(resp.Groups) != 1 {
		return false, "no group"
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return false, err.Error()
	}
	if g.State != "Stable" || len(g.Members) != len(members) {
		return false, fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
	}
	if g.AssignorName != "" && g.AssignorName != "range" && g.AssignorName != "uniform" {
		return false, "assignor " + g.AssignorName
	}
	byID := map[string]*kip848Member{}
	for _, m := range members {
		id, _ := m.cl.GroupMetadata()
		byID[id] = m
	}
	seen := map[string]int{}
	for _, gm := range g.Members {
		if gm.MemberType == 0 {
			return false, "a classic member: kgo did not speak KIP-848"
		}
		if gm.MemberEpoch != g.Epoch {
			return false, fmt.Sprintf("member epoch %d, group epoch %d", gm.MemberEpoch, g.Epoch)
		}
		have, want := kip848Parts(gm.Assignment), kip848Parts(gm.TargetAssignment)
		if !reflect.DeepEqual(have, want) {
			return false, "assignment is not the target yet"
		}
		m := byID[gm.MemberID]
		if m == nil {
			return false, "unknown member " + gm.MemberID
		}
		for _, topic := range []string{a, b} {
			if !slices.Equal(have[topic], m.partitions(topic)) {
				return false, m.name + "'s callbacks lag the broker"
			}
			for _, p := range have[topic] {
				seen[fmt.Sprint(topic, p)]++
			}
		}
	}
	if len(seen) != 12 {
		return false, fmt.Sprintf("%d partitions assigned", len(seen))
	}
	return true, ""
}

func kip848Parts(a kmsg.Assignment) map[string][]int32 {
	out := map[string][]int32{}
	for _, tp := range a.TopicPartitions {
		ps := slices.Clone(tp.Partitions)
		slices.Sort(ps)
		out[tp.Topic] = ps
	}
	return out
}
