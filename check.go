package weir

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/topology"
)

// Check runs the preflight Run runs at start against the cluster, without
// joining the group or creating a topic: every source and sink topic
// exists (unless WithCreateSinkTopics), the sources of each sub-topology —
// a join's two sides, a repartition topic weir would create among them —
// are co-partitioned, the internal topics that exist have the partition
// count weir needs and a changelog is compacted, and under ExactlyOnce the
// brokers offer transactions and a transaction coordinator answers. It
// returns every problem at once (errors.Join), each naming its topic and
// what is wrong; nil if Run would start. `weir check` does the same from
// the command line.
func (a *App) Check(ctx context.Context) error {
	kc := a.cfg.kafkaConfig()
	admin, err := kafka.NewAdmin(kc)
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	defer admin.Close()
	txnID := ""
	if a.cfg.guarantee == ExactlyOnce {
		txnID = a.cfg.applicationID + "-check"
	}
	_, _, err = tasks.Check(ctx, admin, tasks.RequirementsOf(a.topo.Graph(), a.cfg.applicationID), a.preflightOptions(), txnID)
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	return nil
}

// preflightOptions are the preflight's options for the App's settings.
func (a *App) preflightOptions() tasks.PreflightOptions {
	return tasks.PreflightOptions{
		DeadLetter:  a.cfg.badRecords == DeadLetter,
		SkipSinks:   a.cfg.mode == MicroBatch && a.cfg.microBatch.ForEachBatch != nil,
		CreateSinks: a.cfg.createSinks,
		Internal:    tasks.TopicSettings{ReplicationFactor: a.cfg.replication, Config: a.cfg.topicConfig},
	}
}

// TopicRequirements returns, as JSON, the topics topo reads, writes and
// creates for the application: what `weir check --topology FILE` checks
// against a cluster. Write it from the application's own code (its
// topology is Go code the command cannot build), e.g. behind a flag.
func TopicRequirements(topo *topology.Topology, applicationID string) ([]byte, error) {
	if topo == nil {
		return nil, fmt.Errorf("%w: nil topology", ErrConfig)
	}
	if applicationID == "" {
		return nil, fmt.Errorf("%w: no application id", ErrConfig)
	}
	b, err := json.MarshalIndent(tasks.RequirementsOf(topo.Graph(), applicationID), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("weir: topic requirements: %w", err)
	}
	return b, nil
}
