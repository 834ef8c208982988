package runtime

import (
	"errors"
	"fmt"
	"sort"

	"github.com/weirstream/weir/processor"
)

// ErrCoPartitioning is wrapped by the error for source topics of one
// sub-topology with different partition counts.
var ErrCoPartitioning = errors.New("runtime: topics are not co-partitioned")

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
}

// Plan resolves the topic layout of g for the application, given the
// partition counts of its external source topics. Every source topic of a
// sub-topology must have the same partition count (they are read together,
// partition p by task p); repartition topics take the count of the
// sub-topology that writes them unless the topology overrides it;
// changelogs take the count of the sub-topology that owns the store.
func Plan(g *processor.Graph, appID string, external map[string]int32) (*TopicPlan, error) {
	n := len(g.Subtopologies)
	p := &TopicPlan{Subtopology: map[string]int{}, Partitions: make([]int32, n), Sources: make([][]string, n)}
	internalCount := map[string]int32{}
	for _, it := range g.InternalTopics {
		if !it.Compacted && it.Partitions > 0 {
			internalCount[it.Topic.Resolve(appID)] = it.Partitions
		}
	}
	// Resolve until nothing changes: a sub-topology reading a repartition
	// topic learns its count from the writer.
	for changed := true; changed; {
		changed = false
		for i := range g.Subtopologies {
			if p.Partitions[i] > 0 {
				continue
			}
			count, err := subtopologyCount(&g.Subtopologies[i], appID, external, internalCount)
			if err != nil {
				return nil, err
			}
			if count > 0 {
				p.Partitions[i] = count
				changed = true
			}
		}
		for _, it := range g.InternalTopics {
			name := it.Topic.Resolve(appID)
			if _, ok := internalCount[name]; ok || it.Compacted {
				continue
			}
			if c := p.Partitions[it.Subtopology]; c > 0 {
				internalCount[name] = c
				changed = true
			}
		}
	}
	for i := range g.Subtopologies {
		if p.Partitions[i] == 0 {
			return nil, fmt.Errorf("runtime: cannot tell the partition count of sub-topology %d", i)
		}
		for _, ref := range g.Subtopologies[i].SourceTopics() {
			name := ref.Resolve(appID)
			p.Subtopology[name] = i
			p.Sources[i] = append(p.Sources[i], name)
		}
	}
	for _, it := range g.InternalTopics {
		name := it.Topic.Resolve(appID)
		count := internalCount[name]
		if it.Compacted {
			count = p.Partitions[it.Subtopology]
		}
		p.Internal = append(p.Internal, InternalTopic{Name: name, Partitions: count, Compacted: it.Compacted})
	}
	sort.Slice(p.Internal, func(i, j int) bool { return p.Internal[i].Name < p.Internal[j].Name })
	return p, nil
}

// subtopologyCount returns the common partition count of st's sources, 0 if
// one is still unknown, or a co-partitioning error.
func subtopologyCount(st *processor.Subtopology, appID string, external, internal map[string]int32) (int32, error) {
	var count int32
	first := ""
	for _, ref := range st.SourceTopics() {
		name := ref.Resolve(appID)
		var c int32
		if ref.Internal {
			c = internal[name]
			if c == 0 {
				return 0, nil
			}
		} else {
			var ok bool
			if c, ok = external[name]; !ok {
				return 0, fmt.Errorf("runtime: no partition count for source topic %q", name)
			}
		}
		if count == 0 {
			count, first = c, name
			continue
		}
		if c != count {
			return 0, fmt.Errorf("%w: sub-topology %d reads %q (%d partitions) and %q (%d partitions); they must have the same count",
				ErrCoPartitioning, st.ID, first, count, name, c)
		}
	}
	return count, nil
}

// ExternalSources returns the external topics g reads.
func ExternalSources(g *processor.Graph) []string {
	var out []string
	seen := map[string]bool{}
	for i := range g.Subtopologies {
		for _, ref := range g.Subtopologies[i].SourceTopics() {
			if !ref.Internal && !seen[ref.Name] {
				seen[ref.Name] = true
				out = append(out, ref.Name)
			}
		}
	}
	return out
}
