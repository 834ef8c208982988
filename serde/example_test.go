package serde_test

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/serde"
)

func ExampleString() {
	s := serde.String()
	b, _ := s.Serialize("words", "hello")
	v, err := s.Deserialize("words", b)
	fmt.Printf("%q %v\n", b, err)
	fmt.Println(v)

	// Int64 is strict about lengths: bad input is an ErrDeserialize.
	_, err = serde.Int64().Deserialize("counts", []byte("hello"))
	fmt.Println(errors.Is(err, serde.ErrDeserialize), err)
	// Output:
	// "hello" <nil>
	// hello
	// true serde: cannot deserialize: int64: want 8 bytes, got 5
}

func ExampleJSON() {
	type Click struct {
		User  string `json:"user"`
		Count int    `json:"count"`
	}
	s := serde.JSON[Click]()
	b, _ := s.Serialize("clicks", Click{User: "ann", Count: 3})
	fmt.Println(string(b))

	c, _ := s.Deserialize("clicks", b)
	fmt.Printf("%+v\n", c)

	_, err := s.Deserialize("clicks", []byte(`{"user":`))
	fmt.Println(errors.Is(err, serde.ErrDeserialize), err)
	// Output:
	// {"user":"ann","count":3}
	// {User:ann Count:3}
	// true serde: cannot deserialize: json: unexpected end of JSON input
}

func ExampleNewAvro() {
	s, err := serde.NewAvro(`{
		"type": "record", "name": "Click",
		"fields": [
			{"name": "user", "type": "string"},
			{"name": "count", "type": "long"},
			{"name": "ref", "type": ["null", "string"], "default": null}
		]
	}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := s.Serialize("clicks", map[string]any{
		"user":  "ann",
		"count": 3,
		"ref":   map[string]any{"string": "home"}, // a union branch, by type name
	})
	fmt.Printf("% x\n", b)

	m, _ := s.Deserialize("clicks", b)
	fmt.Println(m)

	_, err = s.Deserialize("clicks", append(b, 0))
	fmt.Println(err)
	// Output:
	// 06 61 6e 6e 06 02 08 68 6f 6d 65
	// map[count:3 ref:map[string:home] user:ann]
	// serde: cannot deserialize: avro: malformed avro binary: 1 trailing bytes after the value
}

func ExampleNewAvroTyped() {
	type Click struct {
		User  string  `json:"user"`
		Count int64   `json:"count"`
		Ref   *string `json:"ref"` // a ["null", "string"] union
	}
	s, err := serde.NewAvroTyped[Click](`{
		"type": "record", "name": "Click",
		"fields": [
			{"name": "user", "type": "string"},
			{"name": "count", "type": "long"},
			{"name": "ref", "type": ["null", "string"], "default": null}
		]
	}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	ref := "home"
	b, _ := s.Serialize("clicks", Click{User: "ann", Count: 3, Ref: &ref})
	fmt.Printf("% x\n", b) // the same bytes as ExampleNewAvro

	c, _ := s.Deserialize("clicks", b)
	fmt.Println(c.User, c.Count, *c.Ref)
	// Output:
	// 06 61 6e 6e 06 02 08 68 6f 6d 65
	// ann 3 home
}

func ExampleNewConfluentAvro() {
	reg := serde.NewMemoryRegistry()
	s, err := serde.NewConfluentAvro(reg,
		`{"type":"record","name":"Point","fields":[{"name":"x","type":"long"}]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := s.Serialize("points", map[string]any{"x": int64(5)})
	fmt.Printf("% x\n", b)
	fmt.Println(reg.Subjects())

	id, payload, _ := serde.ParseWireHeader(b)
	fmt.Println(id, payload)

	m, _ := s.Deserialize("points", b)
	fmt.Println(m)
	// Output:
	// 00 00 00 00 01 0a
	// [points-value]
	// 1 [10]
	// map[x:5]
}
