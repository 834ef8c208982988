package serde

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
)

// SchemaResolver is the part of a schema registry that serdes need: schema
// text by id for reading, and the id of a schema under a subject for writing.
// It is a pure interface; the HTTP client for a Confluent-compatible Schema
// Registry is in package serde/registry (this package does no I/O), and
// NewMemoryRegistry is an in-memory one.
//
// Implementations must be safe for concurrent use. Serdes cache what a
// resolver returns, so an id must keep naming the same schema.
type SchemaResolver interface {
	// SchemaByID returns the schema registered under id, or an error
	// wrapping ErrSchemaNotFound if there is none.
	SchemaByID(id int32) (string, error)
	// IDForSchema returns the id of schema under subject, registering the
	// schema under the subject first if the resolver does that (a registry
	// with auto-registration) or failing if it does not.
	IDForSchema(subject, schema string) (int32, error)
}

var _ SchemaResolver = (*MemoryRegistry)(nil)

// MemoryRegistry is an in-memory SchemaResolver for tests, examples and
// single-process applications. Like a Confluent Schema Registry it registers
// a schema the first time IDForSchema sees it, numbers schemas from 1 in the
// order they are first registered, and gives the same schema the same id
// under every subject. Unlike one, it compares schemas as exact strings, with
// no normalization and no compatibility checks.
//
// A MemoryRegistry is safe for concurrent use. The zero value is not usable;
// call NewMemoryRegistry.
type MemoryRegistry struct {
	mu       sync.RWMutex
	schemas  []string           // schemas[id-1] is the schema with id
	ids      map[string]int32   // schema → id
	subjects map[string][]int32 // subject → ids, in the order registered
}

// NewMemoryRegistry returns an empty MemoryRegistry.
func NewMemoryRegistry() *MemoryRegistry {
	return &MemoryRegistry{
		ids:      make(map[string]int32),
		subjects: make(map[string][]int32),
	}
}

// SchemaByID implements SchemaResolver.
func (r *MemoryRegistry) SchemaByID(id int32) (string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if id < 1 || int(id) > len(r.schemas) {
		return "", fmt.Errorf("%w: id %d", ErrSchemaNotFound, id)
	}
	return r.schemas[id-1], nil
}

// IDForSchema implements SchemaResolver. It registers schema under subject
// if it is not registered there yet and returns its id. An empty subject or
// schema is an error.
func (r *MemoryRegistry) IDForSchema(subject, schema string) (int32, error) {
	if subject == "" {
		return 0, errors.New("serde: memory registry: empty subject")
	}
	if schema == "" {
		return 0, errors.New("serde: memory registry: empty schema")
	}
	r.mu.RLock()
	id, ok := r.ids[schema]
	known := ok && slices.Contains(r.subjects[subject], id)
	r.mu.RUnlock()
	if known {
		return id, nil
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok = r.ids[schema]
	if !ok {
		if len(r.schemas) == math.MaxInt32 {
			return 0, errors.New("serde: memory registry: out of schema ids")
		}
		r.schemas = append(r.schemas, schema)
		id = int32(len(r.schemas))
		r.ids[schema] = id
	}
	if !slices.Contains(r.subjects[subject], id) {
		r.subjects[subject] = append(r.subjects[subject], id)
	}
	return id, nil
}

// Versions returns the ids of the schemas registered under subject, oldest
// first, or nil if there are none. Version n of the subject is the n-th id.
func (r *MemoryRegistry) Versions(subject string) []int32 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.subjects[subject])
}

// Subjects returns the subjects that have schemas, sorted.
func (r *MemoryRegistry) Subjects() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.subjects))
}
