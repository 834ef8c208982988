package tasks

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/weirstream/weir/processor"
)

// TopicPlan is the resolved layout of an application's topics: which
// sub-topology reads each source topic, how many partitions (tasks) each
// sub-topology has, and the internal topics to create.
type TopicPlan struct {
	// Subtopology maps each resolved source topic to its reader.
	Subtopology map[string]int
	// Partitions is the task count of each sub-topology.
	Partitions []int32
	// Internal lists the internal topics with their partition counts.
	Internal []InternalTopic
	// Sources lists the resolved source topics of each sub-topology.
	Sources [][]string
}

// InternalTopic is an internal topic to create.
type InternalTopic struct {
	Name       string
	Partitions int32
	Compacted  bool
	// Subtopology writes it (repartition) or owns its store (changelog).
	Subtopology int `json:"-"`
}

// Requirements are the topics an application's topology reads, writes and
// creates, with the names resolved for its application id: what a
// preflight checks against the cluster. They are pure data, taken from the
// topology alone (RequirementsOf), and serialise to JSON for `weir check`.
type Requirements struct {
	ApplicationID string `json:"applicationId"`
	// Subtopologies, indexed by sub-topology id.
	Subtopologies []SubtopologyTopics `json:"subtopologies"`
	// Internal are the repartition and changelog topics weir creates.
	Internal []InternalRequirement `json:"internal,omitempty"`
	// Globals are the topics of the global tables, read whole by every
	// instance outside the group (global.go).
	Globals []string `json:"globals,omitempty"`
}

// SubtopologyTopics are the topics one sub-topology reads and writes.
// Every source must have the same partition count (a join reads its sides
// together, partition p by task p).
type SubtopologyTopics struct {
	Sources []string `json:"sources"`
	Sinks   []string `json:"sinks,omitempty"`
}

// InternalRequirement is a repartition or changelog topic.
type InternalRequirement struct {
	Name string `json:"name"`
	// Subtopology writes the topic (repartition) or owns the store
	// (changelog); the topic takes its partition count.
	Subtopology int `json:"subtopology"`
	// Partitions, when positive, overrides that count (Repartition with a
	// partition count).
	Partitions int32 `json:"partitions,omitempty"`
	// Compacted: a changelog.
	Compacted bool `json:"compacted,omitempty"`
}

// RequirementsOf returns the topics g needs for the application.
func RequirementsOf(g *processor.Graph, appID string) Requirements {
	req := Requirements{ApplicationID: appID, Subtopologies: make([]SubtopologyTopics, len(g.Subtopologies))}
	for i := range g.Subtopologies {
		st := &g.Subtopologies[i]
		req.Subtopologies[i] = SubtopologyTopics{
			Sources: processor.TopicNames(appID, st.SourceTopics()),
			Sinks:   processor.TopicNames(appID, st.SinkTopics()),
		}
	}
	for _, gs := range g.Globals {
		req.Globals = append(req.Globals, gs.Topic)
	}
	for _, it := range g.InternalTopics {
		req.Internal = append(req.Internal, InternalRequirement{
			Name: it.Topic.Resolve(appID), Subtopology: it.Subtopology, Partitions: it.Partitions, Compacted: it.Compacted,
		})
	}
	return req
}

// internal returns the internal topic named name.
func (req Requirements) internal(name string) (InternalRequirement, bool) {
	for _, it := range req.Internal {
		if it.Name == name {
			return it, true
		}
	}
	return InternalRequirement{}, false
}

// ExternalSources returns the topics the application reads that it does
// not create.
func (req Requirements) ExternalSources() []string {
	var out []string
	for _, st := range req.Subtopologies {
		for _, t := range st.Sources {
			if _, ok := req.internal(t); !ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// ExternalSinks returns the topics the application writes that it does
// not create, with the first sub-topology writing each.
func (req Requirements) ExternalSinks() (topics []string, writer map[string]int) {
	writer = map[string]int{}
	for i, st := range req.Subtopologies {
		for _, t := range st.Sinks {
			if _, ok := req.internal(t); ok {
				continue
			}
			if _, seen := writer[t]; !seen {
				writer[t] = i
				topics = append(topics, t)
			}
		}
	}
	return topics, writer
}

// Plan resolves the topic layout of g for the application, given the
// partition counts of its external source topics (see PlanTopics).
func Plan(g *processor.Graph, appID string, external map[string]int32) (*TopicPlan, error) {
	return PlanTopics(RequirementsOf(g, appID), external)
}

// PlanTopics resolves the topic layout, given the partition counts of the
// external source topics. Every source topic of a sub-topology must have
// the same partition count (they are read together, partition p by task
// p); repartition topics take the count of the sub-topology that writes
// them unless the topology overrides it; changelogs take the count of the
// sub-topology that owns the store. Every problem is reported, joined.
func PlanTopics(req Requirements, external map[string]int32) (*TopicPlan, error) {
	p, errs := planTopics(req, external)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// planTopics is PlanTopics, returning every problem in a list.
func planTopics(req Requirements, external map[string]int32) (*TopicPlan, []error) {
	n := len(req.Subtopologies)
	p := &TopicPlan{Subtopology: map[string]int{}, Partitions: make([]int32, n), Sources: make([][]string, n)}
	internalCount := map[string]int32{}
	for _, it := range req.Internal {
		if !it.Compacted && it.Partitions > 0 {
			internalCount[it.Name] = it.Partitions
		}
	}
	var errs []error
	failed := make([]bool, n)
	reported := map[string]bool{}
	// Resolve until nothing changes: a sub-topology reading a repartition
	// topic learns its count from the writer.
	for changed := true; changed; {
		changed = false
		for i := range req.Subtopologies {
			if p.Partitions[i] > 0 || failed[i] {
				continue
			}
			count, err := subtopologyCount(req, i, external, internalCount)
			if err != nil {
				failed[i], changed = true, true
				if !reported[err.Error()] {
					reported[err.Error()] = true
					errs = append(errs, err)
				}
				continue
			}
			if count > 0 {
				p.Partitions[i] = count
				changed = true
			}
		}
		for _, it := range req.Internal {
			if _, ok := internalCount[it.Name]; ok || it.Compacted {
				continue
			}
			if c := p.Partitions[it.Subtopology]; c > 0 {
				internalCount[it.Name] = c
				changed = true
			}
		}
	}
	for i, st := range req.Subtopologies {
		if p.Partitions[i] == 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("runtime: cannot tell the partition count of sub-topology %d", i))
		}
		for _, name := range st.Sources {
			p.Subtopology[name] = i
			p.Sources[i] = append(p.Sources[i], name)
		}
	}
	// With errors the plan is partial: an internal topic whose count is
	// unknown has Partitions 0.
	for _, it := range req.Internal {
		count := internalCount[it.Name]
		if it.Compacted {
			count = p.Partitions[it.Subtopology]
		}
		p.Internal = append(p.Internal, InternalTopic{Name: it.Name, Partitions: count, Compacted: it.Compacted, Subtopology: it.Subtopology})
	}
	sort.Slice(p.Internal, func(i, j int) bool { return p.Internal[i].Name < p.Internal[j].Name })
	return p, errs
}

// subtopologyCount returns the common partition count of sub-topology i's
// sources, 0 if one is still unknown, or the error of a missing source or
// of sources that are not co-partitioned.
func subtopologyCount(req Requirements, i int, external, internal map[string]int32) (int32, error) {
	var count int32
	first := ""
	var missing []error
	unknown := false
	for _, name := range req.Subtopologies[i].Sources {
		var c int32
		if it, ok := req.internal(name); ok {
			if it.Subtopology == i && !it.Compacted && it.Partitions <= 0 {
				// The topic copies this sub-topology's count (a
				// foreign-key join's): co-partitioned by construction.
				continue
			}
			c = internal[name]
			if c == 0 {
				unknown = true
				continue
			}
		} else {
			var ok bool
			if c, ok = external[name]; !ok || c <= 0 {
				missing = append(missing, fmt.Errorf("%w for source topic %q", errNoCount, name))
				continue
			}
		}
		if count == 0 {
			count, first = c, name
			continue
		}
		if c != count {
			return 0, fmt.Errorf("%w: sub-topology %d reads %q (%d partitions) and %q (%d partitions); they must have the same count",
				ErrCoPartitioning, i, first, count, name, c)
		}
	}
	if len(missing) > 0 {
		return 0, errors.Join(missing...)
	}
	if unknown {
		return 0, nil
	}
	return count, nil
}

// ExternalSources returns the external topics g reads.
func ExternalSources(g *processor.Graph) []string {
	return RequirementsOf(g, "").ExternalSources()
}
