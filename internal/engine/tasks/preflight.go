package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/kafka"
)

// The preflight: before a member joins its group, everything the topology
// needs of the cluster is checked at once, and every problem reported
// together, naming the topic and what is wrong — instead of an application
// that joins, processes, and then fails (or, under exactly-once, aborts
// every epoch) on a topic it cannot write. The decisions (CheckTopics) are
// pure: they take the topology's Requirements and the facts the cluster
// gave (kafka.Admin.TopicFacts); Runtime.Preflight and `weir check` do the
// asking.

// PreflightOptions say what a preflight checks besides the topology's own
// topics.
type PreflightOptions struct {
	// DeadLetter: a dead-letter topic "<source>-dlq" per source topic,
	// created when missing.
	DeadLetter bool
	// SkipSinks: the sinks do not write to Kafka (micro-batch's
	// ForEachBatch); their topics are not checked.
	SkipSinks bool
	// CreateSinks, when set, creates a missing sink topic with these
	// settings instead of reporting it.
	CreateSinks *SinkTopics
	// Internal are the settings of the topics weir creates.
	Internal TopicSettings
}

// SinkTopics are the settings of the sink topics a preflight creates.
type SinkTopics struct {
	// Partitions of a created sink topic, at least 1.
	Partitions int32
	// Config of a created sink topic (cleanup.policy included, if set).
	Config map[string]string
}

// PreflightTopics returns the topics a preflight asks the cluster about,
// and those whose cleanup.policy it needs (the internal ones).
func PreflightTopics(req Requirements, opts PreflightOptions) (all, withPolicy []string) {
	add := func(t string) {
		for _, x := range all {
			if x == t {
				return
			}
		}
		all = append(all, t)
	}
	for _, t := range req.ExternalSources() {
		add(t)
		if opts.DeadLetter {
			add(DeadLetterTopic(t))
		}
	}
	for _, t := range req.Globals {
		add(t)
		if opts.DeadLetter {
			add(DeadLetterTopic(t))
		}
	}
	for _, it := range req.Internal {
		add(it.Name)
		withPolicy = append(withPolicy, it.Name)
		if opts.DeadLetter && !it.Compacted {
			add(DeadLetterTopic(it.Name))
		}
	}
	if !opts.SkipSinks {
		sinks, _ := req.ExternalSinks()
		for _, t := range sinks {
			add(t)
		}
	}
	return all, withPolicy
}

// CheckTopics decides, from the facts of every topic PreflightTopics
// names, whether the application can run: its plan, and the topics to
// create (missing internal and dead-letter topics, and missing sinks with
// CreateSinks). It reports every problem at once, joined: a missing source
// or sink topic (ErrMissingTopic), sources of a sub-topology — the two
// sides of a join, a repartition topic weir would create among them — that
// are not co-partitioned (ErrCoPartitioning), and an existing internal
// topic with another partition count than weir needs or a changelog that
// is not compacted (ErrInternalTopic), a topic the cluster refuses to
// describe (ErrNotAuthorized, naming the ACL).
func CheckTopics(req Requirements, facts map[string]kafka.TopicFacts, opts PreflightOptions) (*TopicPlan, []kafka.TopicSpec, error) {
	var errs []error
	external := map[string]int32{}
	for _, t := range req.ExternalSources() {
		switch f := facts[t]; {
		case f.Exists():
			external[t] = f.Partitions
		case f.Unauthorized:
			errs = append(errs, fmt.Errorf("%w: source topic %q: the cluster refuses to describe it (an ACL granting Read on it is needed)", ErrNotAuthorized, t))
		default:
			errs = append(errs, fmt.Errorf("%w: source topic %q does not exist", ErrMissingTopic, t))
		}
	}
	var create []kafka.TopicSpec
	if !opts.SkipSinks {
		sinks, writer := req.ExternalSinks()
		for _, t := range sinks {
			switch {
			case facts[t].Exists():
			case facts[t].Unauthorized:
				errs = append(errs, fmt.Errorf("%w: sink topic %q: the cluster refuses to describe it (an ACL granting Write on it is needed)", ErrNotAuthorized, t))
			case opts.CreateSinks != nil:
				create = append(create, opts.CreateSinks.spec(t, opts.Internal.ReplicationFactor))
			default:
				errs = append(errs, fmt.Errorf("%w: sink topic %q does not exist (sub-topology %d writes to it): "+
					"create it, or let weir create it (WithCreateSinkTopics)", ErrMissingTopic, t, writer[t]))
			}
		}
	}
	plan, planErrs := planTopics(req, external)
	for _, err := range planErrs {
		if !errors.Is(err, errNoCount) { // a missing source, reported above
			errs = append(errs, err)
		}
	}
	for _, it := range plan.Internal {
		f := facts[it.Name]
		if f.Unauthorized {
			errs = append(errs, fmt.Errorf("%w: internal topic %q: the cluster refuses to describe it (ACLs granting Create, Read and Write on it are needed, e.g. prefixed %q)",
				ErrNotAuthorized, it.Name, req.ApplicationID+"-"))
			continue
		}
		if !f.Exists() {
			if it.Partitions > 0 {
				create = append(create, opts.Internal.spec(it.Name, it.Partitions, it.Compacted))
			}
			continue
		}
		errs = append(errs, checkInternal(it, f)...)
	}
	if opts.DeadLetter {
		for _, topic := range slices.Sorted(maps.Keys(plan.Subtopology)) {
			sub := plan.Subtopology[topic]
			dlq := DeadLetterTopic(topic)
			f := facts[dlq]
			switch {
			case plan.Partitions[sub] == 0: // unknown: reported above
			case f.Unauthorized:
				errs = append(errs, fmt.Errorf("%w: dead-letter topic %q: the cluster refuses to describe it (an ACL granting Write on it is needed, and one granting Create while it does not exist)", ErrNotAuthorized, dlq))
			case !f.Exists():
				create = append(create, opts.Internal.spec(dlq, plan.Partitions[sub], false))
			case f.Partitions != plan.Partitions[sub]:
				errs = append(errs, fmt.Errorf("%w: dead-letter topic %q has %d partitions; weir needs %d, as many as %q",
					ErrInternalTopic, dlq, f.Partitions, plan.Partitions[sub], topic))
			}
		}
	}
	gErrs, gCreate := checkGlobalTopics(req, facts, opts)
	errs, create = append(errs, gErrs...), append(create, gCreate...)
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return plan, create, nil
}

// checkInternal reports what is wrong with an existing internal topic.
func checkInternal(it InternalTopic, f kafka.TopicFacts) []error {
	var errs []error
	kind, role := "repartition", "writes it"
	if it.Compacted {
		kind, role = "changelog", "owns its store"
	}
	if it.Partitions > 0 && f.Partitions != it.Partitions {
		errs = append(errs, fmt.Errorf("%w: %s topic %q has %d partitions; weir needs %d (the partition count of sub-topology %d, which %s): "+
			"delete it to let weir create it again, or fix the topology", ErrInternalTopic, kind, it.Name, f.Partitions, it.Partitions, it.Subtopology, role))
	}
	compact := policyHas(f.CleanupPolicy, "compact")
	switch {
	case it.Compacted && f.CleanupPolicy != "" && !compact:
		errs = append(errs, fmt.Errorf("%w: changelog topic %q has cleanup.policy=%s; a changelog must be compacted (cleanup.policy=compact): "+
			"with retention a restore loses the keys whose last write has expired", ErrInternalTopic, it.Name, f.CleanupPolicy))
	case !it.Compacted && compact && !policyHas(f.CleanupPolicy, "delete"):
		errs = append(errs, fmt.Errorf("%w: repartition topic %q has cleanup.policy=%s; it must be delete: compaction drops records of a key before they are read",
			ErrInternalTopic, it.Name, f.CleanupPolicy))
	}
	return errs
}

// policyHas reports whether a cleanup.policy ("compact,delete") holds p.
func policyHas(policy, p string) bool {
	for part := range strings.SplitSeq(policy, ",") {
		if strings.TrimSpace(part) == p {
			return true
		}
	}
	return false
}

// spec is the TopicSpec of a sink topic to create.
func (s *SinkTopics) spec(name string, replication int16) kafka.TopicSpec {
	return kafka.TopicSpec{Name: name, Partitions: s.Partitions, ReplicationFactor: max(replication, 0), Config: maps.Clone(s.Config)}
}

// Preflight checks the cluster for the topology before the member joins
// its group — see CheckTopics; under exactly-once also the transactional
// features (kafka.Admin.CheckTransactions) — reports every problem at once,
// and creates the topics weir creates. It runs once; Prepare runs it if
// the engine's caller did not.
func (r *Runtime) Preflight(ctx context.Context) error {
	if r.plan.Load() != nil {
		return nil
	}
	req := RequirementsOf(r.cfg.Graph, r.cfg.ApplicationID)
	opts := PreflightOptions{
		DeadLetter: r.cfg.BadRecords == DeadLetter, SkipSinks: r.sinks != nil || r.cfg.SkipSinkTopics,
		CreateSinks: r.cfg.CreateSinks, Internal: r.cfg.InternalTopics,
	}
	plan, create, err := Check(ctx, r.admin, req, opts, r.cfg.TransactionalID)
	if err != nil {
		return err
	}
	if len(create) > 0 {
		if err := r.admin.EnsureTopics(ctx, create); err != nil {
			return fmt.Errorf("runtime: create topics: %w", err)
		}
	}
	r.plan.Store(plan)
	return nil
}

// Check asks the cluster about req's topics and decides (CheckTopics);
// with a transactional id it also checks the transactional features
// exactly-once needs. Every problem is reported at once.
func Check(ctx context.Context, admin *kafka.Admin, req Requirements, opts PreflightOptions, transactionalID string) (*TopicPlan, []kafka.TopicSpec, error) {
	all, withPolicy := PreflightTopics(req, opts)
	facts, err := admin.TopicFacts(ctx, all, withPolicy)
	if err != nil {
		return nil, nil, fmt.Errorf("runtime: preflight: %w", err)
	}
	plan, create, topicErr := CheckTopics(req, facts, opts)
	var txnErr error
	if transactionalID != "" {
		txnErr = admin.CheckTransactions(ctx, transactionalID)
	}
	if err := errors.Join(topicErr, txnErr); err != nil {
		return nil, nil, err
	}
	return plan, create, nil
}
