package serde

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryRegistry(t *testing.T) {
	r := NewMemoryRegistry()

	_, err := r.SchemaByID(1)
	require.ErrorIs(t, err, ErrSchemaNotFound)
	require.EqualError(t, err, "serde: schema not found: id 1")

	id, err := r.IDForSchema("a-value", `"string"`)
	require.NoError(t, err)
	require.Equal(t, int32(1), id, "ids start at 1")

	again, err := r.IDForSchema("a-value", `"string"`)
	require.NoError(t, err)
	require.Equal(t, id, again)

	other, err := r.IDForSchema("b-value", `"string"`)
	require.NoError(t, err)
	require.Equal(t, id, other, "the same schema has the same id under every subject")

	id2, err := r.IDForSchema("a-value", `"long"`)
	require.NoError(t, err)
	require.Equal(t, int32(2), id2)

	spaced, err := r.IDForSchema("a-value", ` "long"`)
	require.NoError(t, err)
	require.Equal(t, int32(3), spaced, "schemas are compared as exact strings")

	s, err := r.SchemaByID(2)
	require.NoError(t, err)
	require.Equal(t, `"long"`, s)

	require.Equal(t, []int32{1, 2, 3}, r.Versions("a-value"))
	require.Equal(t, []int32{1}, r.Versions("b-value"))
	require.Nil(t, r.Versions("c-value"))
	require.Equal(t, []string{"a-value", "b-value"}, r.Subjects())

	for _, bad := range []int32{0, -1, 4} {
		_, err := r.SchemaByID(bad)
		require.ErrorIs(t, err, ErrSchemaNotFound)
	}
}

func TestMemoryRegistryRejectsEmpty(t *testing.T) {
	r := NewMemoryRegistry()
	_, err := r.IDForSchema("", `"string"`)
	require.EqualError(t, err, "serde: memory registry: empty subject")
	_, err = r.IDForSchema("s", "")
	require.EqualError(t, err, "serde: memory registry: empty schema")
	require.Empty(t, r.Subjects())
}

func TestMemoryRegistryVersionsIsACopy(t *testing.T) {
	r := NewMemoryRegistry()
	_, err := r.IDForSchema("s", `"string"`)
	require.NoError(t, err)
	v := r.Versions("s")
	v[0] = 99
	require.Equal(t, []int32{1}, r.Versions("s"))
}

func TestMemoryRegistryConcurrent(t *testing.T) {
	r := NewMemoryRegistry()
	const workers, schemas = 8, 50
	ids := make([][]int32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range schemas {
				id, err := r.IDForSchema(fmt.Sprintf("subject-%d", w%2), fmt.Sprintf(`{"type":"fixed","name":"F%d","size":1}`, i))
				require.NoError(t, err)
				s, err := r.SchemaByID(id)
				require.NoError(t, err)
				require.Equal(t, fmt.Sprintf(`{"type":"fixed","name":"F%d","size":1}`, i), s)
				ids[w] = append(ids[w], id)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		require.Equal(t, ids[0], ids[w], "every worker sees the same id for each schema")
	}
	require.Len(t, r.Versions("subject-0"), schemas)
	require.Len(t, r.Versions("subject-1"), schemas)
}
