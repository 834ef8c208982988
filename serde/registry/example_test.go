package registry_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/serde/registry"
)

func ExampleNew() {
	// An in-memory registry with the Confluent API stands in here for a
	// real one, such as "http://localhost:8081".
	fake := srfake.New()
	defer fake.Close()
	url := fake.URL()

	reg, err := registry.New(url,
		registry.WithAutoRegister(true), // the default: register new schemas
		registry.WithRetries(3),         // 5xx and network errors, with backoff
		registry.WithTimeout(10*time.Second),
		// registry.WithBasicAuth(user, password), registry.WithTLS(tlsConfig)
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	points, err := serde.NewConfluentAvro(reg,
		`{"type":"record","name":"Point","fields":[{"name":"x","type":"long"}]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := points.Serialize("points", map[string]any{"x": int64(5)}) // registers "points-value"
	fmt.Printf("% x %v\n", b, err)
	m, err := points.Deserialize("points", b)
	fmt.Println(m, err)

	_, err = reg.SchemaByID(42)
	fmt.Println(errors.Is(err, serde.ErrSchemaNotFound))
	// Output:
	// 00 00 00 00 01 0a <nil>
	// map[x:5] <nil>
	// true
}
