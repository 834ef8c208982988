package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkatest"
)

// kip848Streamer is one member of a KIP-1071 streams group driven with
// raw StreamsGroupHeartbeat requests: what a weir member would send if
// the broker assigned its tasks.
type kip848Streamer struct {
	name    string
	id      string // member id: chosen by the member in KIP-1071
	process string
	epoch   int32

	// The tasks the broker last assigned (a null field in a response
	// means unchanged); the member owns them at once and says so in its
	// next heartbeat, which is how it acknowledges an assignment.
	active, standby, warmup map[int32]bool
	// held are the tasks whose state the member has (active, standby or
	// warm-up at some point): it reports their changelog offsets.
	held map[int32]bool
	// warmupsSeen are the warm-up tasks ever assigned.
	warmupsSeen map[int32]bool
}

func kip848NewStreamer(name string) *kip848Streamer {
	b := make([]byte, 11)
	_, _ = rand.Read(b)
	return &kip848Streamer{
		name: name, id: hex.EncodeToString(b), process: "process-" + name,
		active: map[int32]bool{}, standby: map[int32]bool{}, warmup: map[int32]bool{},
		held: map[int32]bool{}, warmupsSeen: map[int32]bool{},
	}
}

// kip848Topology is one sub-topology ("0") reading a and b, which must
// be co-partitioned, with one state store whose changelog is changelog.
type kip848Topology struct{ a, b, changelog string }

const kip848Subtopology = "0"

func kip848Tasks(set map[int32]bool) []kmsg.TaskIDs {
	ids := kmsg.NewTaskIDs()
	ids.SubtopologyID = kip848Subtopology
	ids.Partitions = slices.Sorted(maps.Keys(set))
	if len(ids.Partitions) == 0 {
		return []kmsg.TaskIDs{}
	}
	return []kmsg.TaskIDs{ids}
}

func kip848SetTasks(dst map[int32]bool, tasks []kmsg.TaskIDs) {
	clear(dst)
	for _, ts := range tasks {
		for _, p := range ts.Partitions {
			dst[p] = true
		}
	}
}

// heartbeat sends one StreamsGroupHeartbeat: a join (epoch 0, with the
// topology), a full heartbeat naming the tasks owned, or a leave (epoch
// -1). It returns the response's statuses.
func (m *kip848Streamer) heartbeat(ctx context.Context, cl kmsg.Requestor, group string, topo kip848Topology, leave bool) ([]string, error) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, m.id, m.epoch
	if leave {
		req.MemberEpoch = -1
	}
	if m.epoch == 0 && !leave {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = kmsg.StringPtr(m.process)
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID = kip848Subtopology
		sub.SourceTopics = []string{topo.a, topo.b}
		cl := kmsg.NewTopicInfo()
		cl.Topic = topo.changelog
		cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
		sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
		cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
		cg.SourceTopics = []int16{0, 1}
		sub.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{cg}
		t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
		req.Topology = &t
	}
	if !leave {
		req.ActiveTasks = kip848Tasks(m.active)
		req.StandbyTasks = kip848Tasks(m.standby)
		req.WarmupTasks = kip848Tasks(m.warmup)
		// Changelog offsets of every task whose state the member has,
		// caught up (100 of 100): the broker's lags for placement.
		req.TaskOffsets, req.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		for _, p := range slices.Sorted(maps.Keys(m.held)) {
			o := kmsg.NewTaskOffset()
			o.SubtopologyID, o.Partition, o.Offset = kip848Subtopology, p, 100
			req.TaskOffsets = append(req.TaskOffsets, o)
			if m.active[p] {
				req.TaskEndOffsets = append(req.TaskEndOffsets, o)
			}
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return nil, fmt.Errorf("%w (%s)", err, msg)
	}
	var statuses []string
	for _, s := range resp.Status {
		statuses = append(statuses, fmt.Sprintf("%d:%s", s.StatusCode, s.StatusDetail))
	}
	if leave {
		return statuses, nil
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		kip848SetTasks(m.active, resp.ActiveTasks)
	}
	if resp.StandbyTasks != nil {
		kip848SetTasks(m.standby, resp.StandbyTasks)
	}
	if resp.WarmupTasks != nil {
		kip848SetTasks(m.warmup, resp.WarmupTasks)
	}
	for _, set := range []map[int32]bool{m.active, m.standby, m.warmup} {
		maps.Copy(m.held, set)
	}
	maps.Copy(m.warmupsSeen, m.warmup)
	return statuses, nil
}

// TestKIP848StreamsGroupStandbys joins a KIP-1071 streams group (Kafka
// 4.2+) with raw StreamsGroupHeartbeat requests: one sub-topology over
// two co-partitioned source topics of 6 partitions and one changelog,
// the group config streams.num.standby.replicas=1, members m1 and m2,
// then m3 joining, then m1 leaving. After each settle it records each
// member's active, standby and warm-up tasks, as weir's assignor would
// have placed them from the lags in its user data.
func TestKIP848StreamsGroupStandbys(t *testing.T) {
	env := kip848Env(t)
	ctx := kip848Ctx(t)
	cl := kip848Admin(t, env)
	group := kip848Name("streams")
	topo := kip848Topology{a: kip848Name("streams-a"), b: kip848Name("streams-b"), changelog: group + "-store-changelog"}
	kip848Create(t, env, topo.a, 6)
	kip848Create(t, env, topo.b, 6)
	kafkatest.DeleteTopicAtEnd(t, env, topo.changelog) // the broker creates it
	// kgo (v1.22.3) does not route the streams group requests (it answers
	// "client is too old; this client does not know what to do with this
	// request"): they go to the group's coordinator by hand.
	coord := kip848Coordinator(t, ctx, cl, group)

	// The group's standbys come from a group config (the broker bounds
	// it by group.streams.max.standby.replicas); the initial delay and
	// the assignment batching are shortened for the experiment.
	cfgs := map[string]string{
		"streams.num.standby.replicas":       "1",
		"streams.initial.rebalance.delay.ms": "0",
		"streams.assignment.interval.ms":     "0",
		// Warm-ups (KIP-441) on the broker: not in DescribeConfigs'
		// answer for a group, but in the coordinator's GroupConfig.
		"streams.num.warmup.replicas":     "2",
		"streams.acceptable.recovery.lag": "10",
	}
	for k, v := range cfgs {
		err := kip848SetGroupConfigs(ctx, cl, group, map[string]string{k: v})
		t.Logf("IncrementalAlterConfigs GROUP %s %s=%s: %v", group, k, v, err)
		if k == "streams.num.standby.replicas" {
			require.NoError(t, err)
		}
	}

	members := map[string]*kip848Streamer{}
	t.Cleanup(func() { // leave, rather than linger a session timeout
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, m := range members {
			_, _ = m.heartbeat(ctx, coord, group, topo, true)
		}
	})
	statuses := map[string]bool{}
	beat := func(m *kip848Streamer) {
		st, err := m.heartbeat(ctx, coord, group, topo, false)
		require.NoError(t, err, "%s: StreamsGroupHeartbeat", m.name)
		for _, s := range st {
			if !statuses[s] {
				statuses[s] = true
				t.Logf("%s: heartbeat status %s", m.name, s)
			}
		}
	}
	join := func(name string) {
		m := kip848NewStreamer(name)
		members[name] = m
		beat(m)
	}
	leave := func(name string) {
		_, err := members[name].heartbeat(ctx, coord, group, topo, true)
		require.NoError(t, err, "%s leaves", name)
		delete(members, name)
	}
	var warmups int
	settle := func(what string) {
		began := time.Now()
		for _, m := range members {
			clear(m.warmupsSeen)
		}
		var why string
		require.Eventually(t, func() bool {
			for _, name := range sortedKeys(members) {
				beat(members[name])
			}
			var ok bool
			ok, why = kip848StreamsSettled(ctx, coord, group, members)
			return ok
		}, 45*time.Second, 200*time.Millisecond, "%s never settled: %s", what, why)
		var rows []string
		for _, name := range sortedKeys(members) {
			m := members[name]
			rows = append(rows, fmt.Sprintf("%s active=%v standby=%v warmup=%v (warm-ups seen %v)", name,
				slices.Sorted(maps.Keys(m.active)), slices.Sorted(maps.Keys(m.standby)),
				slices.Sorted(maps.Keys(m.warmup)), slices.Sorted(maps.Keys(m.warmupsSeen))))
			warmups += len(m.warmupsSeen)
		}
		t.Logf("%-12s settled in %5dms: %s", what, time.Since(began).Milliseconds(), strings.Join(rows, "; "))
		kip848CheckPlacement(t, members)
	}

	join("m1")
	join("m2")
	settle("m1 m2 join")
	join("m3")
	settle("m3 joins")
	m2Before := maps.Clone(members["m2"].active)
	var moved []int32
	leave("m1")
	settle("m1 leaves")
	t.Logf("warm-up tasks seen across the run: %d", warmups)

	// Offsets are committed with the member epoch where the classic
	// protocol puts the generation. The broker keeps the epoch at which
	// each task came to its member: a commit is taken at that epoch or
	// later (up to the member's), refused before it.
	m2 := members["m2"]
	kept := slices.Min(slices.Collect(maps.Keys(m2.active)))
	for p := range m2.active {
		if !m2Before[p] {
			moved = append(moved, p)
		}
	}
	require.NotEmpty(t, moved, "m2 took no task of m1's")
	for _, tc := range []struct {
		what  string
		p     int32
		epoch int32
		want  error
	}{
		{"held since the start, current epoch", kept, m2.epoch, nil},
		{"held since the start, previous epoch", kept, m2.epoch - 1, nil},
		{"taken from m1, current epoch", slices.Min(moved), m2.epoch, nil},
		{"taken from m1, previous epoch", slices.Min(moved), m2.epoch - 1, kerr.StaleMemberEpoch},
		{"taken from m1, next epoch", slices.Min(moved), m2.epoch + 1, kerr.StaleMemberEpoch},
	} {
		err := kip848Commit(ctx, cl, group, m2.id, tc.epoch, topo.a, tc.p)
		t.Logf("OffsetCommit by m2 (member epoch %d) of task 0_%d (%s) at epoch %d: %v", m2.epoch, tc.p, tc.what, tc.epoch, err)
		require.ErrorIs(t, err, tc.want, tc.what)
	}

	// The broker created the changelog, co-partitioned with the sources.
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topo.changelog)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, mresp.Topics, 1)
	t.Logf("changelog %s: error %v, %d partitions", topo.changelog, kerr.ErrorForCode(mresp.Topics[0].ErrorCode), len(mresp.Topics[0].Partitions))
}

// kip848Commit commits offset 1 of topic's partition p for member id at
// epoch, and returns the partition's error.
func kip848Commit(ctx context.Context, cl *kgo.Client, group, id string, epoch int32, topic string, p int32) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = group, id, epoch
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, mresp.Topics[0].TopicID // v10+ names topics by id
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// kip848Coordinator returns the broker coordinating group.
func kip848Coordinator(t *testing.T, ctx context.Context, cl *kgo.Client, group string) *kgo.Broker {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 0 // group
	req.CoordinatorKeys = []string{group}
	var node int32
	require.Eventually(t, func() bool {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false
		}
		node = resp.Coordinators[0].NodeID
		return true
	}, 30*time.Second, 100*time.Millisecond, "no coordinator for %s", group)
	return cl.Broker(int(node))
}

// kip848CheckPlacement asserts what weir's own assignor guarantees: each
// of the 6 tasks active on exactly one member, and with two members or
// more, one standby on a member other than its active's.
func kip848CheckPlacement(t *testing.T, members map[string]*kip848Streamer) {
	t.Helper()
	for p := range int32(6) {
		var actives, standbys []string
		for name, m := range members {
			if m.active[p] {
				actives = append(actives, name)
			}
			if m.standby[p] {
				standbys = append(standbys, name)
			}
		}
		require.Len(t, actives, 1, "task 0_%d active on %v", p, actives)
		if len(members) >= 2 {
			require.Len(t, standbys, 1, "task 0_%d standbys on %v", p, standbys)
			require.NotEqual(t, actives[0], standbys[0], "task 0_%d standby beside its active", p)
		}
	}
}

// kip848StreamsSettled reports whether the streams group is stable with
// the members given, each at the group's epoch, its assignment its
// target and what its heartbeats said.
func kip848StreamsSettled(ctx context.Context, cl kmsg.Requestor, group string, members map[string]*kip848Streamer) (bool, string) {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
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
	if !strings.EqualFold(g.State, "stable") || len(g.Members) != len(members) {
		return false, fmt.Sprintf("state %s, %d members", g.State, len(g.Members))
	}
	byID := map[string]*kip848Streamer{}
	for _, m := range members {
		byID[m.id] = m
	}
	for _, gm := range g.Members {
		m := byID[gm.MemberID]
		if m == nil {
			return false, "unknown member " + gm.MemberID
		}
		if gm.MemberEpoch != g.Epoch {
			return false, fmt.Sprintf("%s at epoch %d, group at %d", m.name, gm.MemberEpoch, g.Epoch)
		}
		if !reflect.DeepEqual(kip848TaskSets(gm.Assignment), kip848TaskSets(gm.TargetAssignment)) {
			return false, m.name + "'s assignment is not its target yet"
		}
		mine := [3]map[int32]bool{m.active, m.standby, m.warmup}
		if !reflect.DeepEqual(kip848TaskSets(gm.Assignment), mine) {
			return false, m.name + "'s heartbeats lag the broker"
		}
	}
	return true, ""
}

func kip848TaskSets(a kmsg.StreamsAssignment) [3]map[int32]bool {
	out := [3]map[int32]bool{{}, {}, {}}
	for i, tasks := range [][]kmsg.TaskIDs{a.ActiveTasks, a.StandbyTasks, a.WarmupTasks} {
		for _, ts := range tasks {
			for _, p := range ts.Partitions {
				out[i][p] = true
			}
		}
	}
	return out
}
