package chaos

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Nodes controls the broker processes of a real cluster, for broker
// faults: what scripts/kafka/node.sh does for a cluster that
// scripts/kafka/start.sh started (KAFKA_NODES=3).
type Nodes interface {
	// Signal sends a signal to node id's process: "kill" (SIGKILL),
	// "stop" (SIGSTOP) or "cont" (SIGCONT).
	Signal(ctx context.Context, id int32, sig string) error
	// Term stops node id with SIGTERM (a controlled shutdown) and waits
	// for its exit.
	Term(ctx context.Context, id int32) error
	// Start starts node id again on its data and waits until it serves.
	Start(ctx context.Context, id int32) error
}

// ScriptNodes is Nodes through a script called as `bash Script VERB ID`
// with VERB kill, stop, cont, term or start (scripts/kafka/node.sh).
type ScriptNodes struct{ Script string }

// Signal implements Nodes.
func (n ScriptNodes) Signal(ctx context.Context, id int32, sig string) error {
	return n.run(ctx, sig, id)
}

// Term implements Nodes.
func (n ScriptNodes) Term(ctx context.Context, id int32) error { return n.run(ctx, "term", id) }

// Start implements Nodes.
func (n ScriptNodes) Start(ctx context.Context, id int32) error { return n.run(ctx, "start", id) }

func (n ScriptNodes) run(ctx context.Context, verb string, id int32) error {
	// node.sh start may take two attempts of up to 5 min each.
	cctx, cancel := context.WithTimeout(ctx, 11*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, "bash", n.Script, verb, strconv.Itoa(int(id))).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: %s %s %d: %w: %s", n.Script, verb, id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// A clusterFault is one broker fault on a real cluster; it returns what it
// did, for the progress line.
type clusterFault struct {
	name string
	run  func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error)
}

// clusterFaults are cycled through by the fault events on a real cluster:
// what operators and failures do to brokers. Before each, the harness
// waits until every partition of the scenario's topics is fully
// replicated again, as Kafka's own system tests bounce one broker at a
// time.
var clusterFaults = []clusterFault{
	{"SIGKILL of an input partition's leader", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		return s.killLeader(ctx, cl, s.topics.In)
	}},
	{"SIGKILL of the group coordinator", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		id, err := coordinator(ctx, cl, s.app, 0)
		if err != nil {
			return "", err
		}
		return s.killAndRestart(ctx, id, "group coordinator")
	}},
	{"SIGKILL of an output partition's leader", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		outputs := s.topics.outputs()
		topic := outputs[s.rng.IntN(len(outputs))]
		return s.killLeader(ctx, cl, topic)
	}},
	{"SIGKILL of a transaction coordinator", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		txn, err := s.someTransaction(ctx, cl)
		if err != nil {
			return "", err
		}
		if txn == "" { // at-least-once: no transactional ids; a random broker then
			ids, err := brokerIDs(ctx, cl)
			if err != nil {
				return "", err
			}
			return s.killAndRestart(ctx, ids[s.rng.IntN(len(ids))], "broker (no transaction open)")
		}
		id, err := coordinator(ctx, cl, txn, 1)
		if err != nil {
			return "", err
		}
		return s.killAndRestart(ctx, id, "transaction coordinator of "+txn)
	}},
	{"a broker stalled past its session (SIGSTOP, SIGCONT)", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		ids, err := brokerIDs(ctx, cl)
		if err != nil {
			return "", err
		}
		id := ids[s.rng.IntN(len(ids))]
		// Past broker.session.timeout.ms (9 s): the controller fences it
		// and moves its leaderships; then it comes back as a zombie.
		const d = 12 * time.Second
		if err := s.cfg.Nodes.Signal(ctx, id, "stop"); err != nil {
			return "", err
		}
		err = s.sleep(ctx, d)
		return fmt.Sprintf("broker %d stalled %v", id, d), errors.Join(err, s.cfg.Nodes.Signal(ctx, id, "cont"))
	}},
	{"a rolling restart (SIGTERM each broker in turn)", func(ctx context.Context, s *scenario, cl *kgo.Client) (string, error) {
		ids, err := brokerIDs(ctx, cl)
		if err != nil {
			return "", err
		}
		for i, id := range ids {
			if i > 0 {
				if err := s.waitInSync(ctx, cl); err != nil {
					return "", err
				}
			}
			if err := s.cfg.Nodes.Term(ctx, id); err != nil {
				return "", err
			}
			if err := s.cfg.Nodes.Start(ctx, id); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("brokers %v restarted one by one", ids), nil
	}},
}

// clusterFault runs one cluster fault after the cluster is fully in sync.
func (s *scenario) clusterFault(ctx context.Context, f clusterFault) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID("weir-chaos-admin"))
	if err != nil {
		return err
	}
	defer cl.Close()
	s.producing.Lock() // no input write in flight during the fault
	defer s.producing.Unlock()
	if err := s.waitInSync(ctx, cl); err != nil {
		return err
	}
	what, err := f.run(ctx, s, cl)
	if err != nil {
		return fmt.Errorf("chaos: broker fault %q: %w", f.name, err)
	}
	s.res.Faults++
	s.logf("broker fault: %s: %s", f.name, what)
	return nil
}

// killLeader SIGKILLs the leader of a random partition of topic and
// restarts it a few seconds later.
func (s *scenario) killLeader(ctx context.Context, cl *kgo.Client, topic string) (string, error) {
	meta, err := metadata(ctx, cl, topic)
	if err != nil {
		return "", err
	}
	parts := meta.Topics[0].Partitions
	p := parts[s.rng.IntN(len(parts))]
	return s.killAndRestart(ctx, p.Leader, fmt.Sprintf("leader of %s/%d", topic, p.Partition))
}

// killAndRestart SIGKILLs broker id and starts it again after 2 to 6 s.
func (s *scenario) killAndRestart(ctx context.Context, id int32, role string) (string, error) {
	if err := s.cfg.Nodes.Signal(ctx, id, "kill"); err != nil {
		return "", err
	}
	down := 2*time.Second + time.Duration(s.rng.Int64N(int64(4*time.Second)))
	if err := s.sleep(ctx, down); err != nil {
		return "", err
	}
	if err := s.cfg.Nodes.Start(ctx, id); err != nil {
		return "", err
	}
	return fmt.Sprintf("broker %d (%s) killed, restarted after %v", id, role, down.Round(100*time.Millisecond)), nil
}

// someTransaction returns the transactional id of one of the scenario's
// instances, an open transaction's if there is one; "" if there is none
// (at-least-once). Each broker lists the transactions it coordinates.
func (s *scenario) someTransaction(ctx context.Context, cl *kgo.Client) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var open, other []string
	for _, sh := range cl.RequestSharded(cctx, kmsg.NewPtrListTransactionsRequest()) {
		if sh.Err != nil {
			continue // a broker that does not answer lists nothing
		}
		for _, t := range sh.Resp.(*kmsg.ListTransactionsResponse).TransactionStates {
			switch {
			case !strings.HasPrefix(t.TransactionalID, s.app):
			case t.TransactionState == "Ongoing":
				open = append(open, t.TransactionalID)
			default:
				other = append(other, t.TransactionalID)
			}
		}
	}
	ids := open
	if len(ids) == 0 {
		ids = other
	}
	if len(ids) == 0 {
		return "", nil
	}
	slices.Sort(ids)
	return ids[s.rng.IntN(len(ids))], nil
}

// waitInSync waits until every partition of the scenario's topics (and
// the group's and transactions' own) has its whole replica set in sync,
// for at most two minutes.
func (s *scenario) waitInSync(ctx context.Context, cl *kgo.Client) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		meta, err := metadata(ctx, cl)
		if err == nil {
			lagging := ""
			for _, t := range meta.Topics {
				if t.Topic == nil || !(strings.HasPrefix(*t.Topic, s.app) || strings.HasPrefix(*t.Topic, "__")) {
					continue
				}
				for _, p := range t.Partitions {
					if len(p.ISR) < len(p.Replicas) || p.Leader < 0 {
						lagging = fmt.Sprintf("%s/%d (isr %v of %v)", *t.Topic, p.Partition, p.ISR, p.Replicas)
					}
				}
			}
			if lagging == "" {
				return nil
			}
			err = errors.New(lagging + " is under-replicated")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the cluster is not in sync after 2m: %w", err)
		}
		if err := s.sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// metadata asks for the given topics (all if none).
func metadata(ctx context.Context, cl *kgo.Client, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest() // nil Topics: all of them
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, mt)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata of %v: %w", t.Topic, err)
		}
	}
	return resp, nil
}

// brokerIDs returns the node ids of the cluster's brokers, sorted.
func brokerIDs(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	meta, err := metadata(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range meta.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// coordinator returns the node id of the coordinator of a group (keyType
// 0) or transactional id (1), retrying for up to 30 s while the cluster
// has none to name (a group's first moments, a coordinator that moved).
func coordinator(ctx context.Context, cl *kgo.Client, key string, keyType int8) (int32, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		id, err := findCoordinator(ctx, cl, key, keyType)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			return id, err
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

func findCoordinator(ctx context.Context, cl *kgo.Client, key string, keyType int8) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = key, keyType
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Coordinators) > 0 {
		c := resp.Coordinators[0]
		return c.NodeID, kerr.ErrorForCode(c.ErrorCode)
	}
	return resp.NodeID, kerr.ErrorForCode(resp.ErrorCode)
}
