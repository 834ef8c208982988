package serde

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// avroKind is the type of an avroShape node.
type avroKind uint8

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroString
	avroRecord
	avroEnum
	avroArray
	avroMap
	avroUnion
	avroFixed
)

// maxAvroMin caps avroShape.min so that sums of it cannot overflow.
const maxAvroMin = 1 << 30

// avroShape is what checkAvro needs to know of a schema: the layout of its
// binary encoding. Named types are shared nodes, so a recursive schema is a
// cyclic graph. Logical types do not change the layout and are not recorded.
type avroShape struct {
	kind  avroKind
	name  string       // full name of a record, enum or fixed
	size  uint         // bytes of a fixed
	count int          // symbols of an enum
	kids  []*avroShape // record fields, union branches, array items or map values
	min   int          // fewest bytes an encoded value takes, capped at maxAvroMin
	// building is set while a record's fields are being parsed; a field that
	// is the record itself (not through a union, array or map) makes the
	// record infinite.
	building bool
}

// avroStringShape is the shape of a map key.
var avroStringShape = &avroShape{kind: avroString, min: 1}

func avroPrimitive(k avroKind) *avroShape {
	mins := [...]int{avroNull: 0, avroBoolean: 1, avroInt: 1, avroLong: 1,
		avroFloat: 4, avroDouble: 8, avroBytes: 1, avroString: 1}
	return &avroShape{kind: k, min: mins[k]}
}

// parseAvroShape builds the shape of the schema that goavro v2.15.0 compiled
// from the same text. To get the same type for every name it resolves names
// exactly as goavro's buildCodec does — its symbol table keys, lookup order
// and the names it registers for decimal and validated-string logical types —
// rather than as the Avro specification says, where the two differ. It is
// called only for schemas goavro accepted.
//
// patterns reports whether the schema uses goavro's "validated-string"
// logical type (see goavroMu).
func parseAvroShape(schema string) (shape *avroShape, patterns bool, err error) {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return nil, false, err
	}
	p := shapeParser{st: map[string]*avroShape{
		"null":    avroPrimitive(avroNull),
		"boolean": avroPrimitive(avroBoolean),
		"int":     avroPrimitive(avroInt),
		"long":    avroPrimitive(avroLong),
		"float":   avroPrimitive(avroFloat),
		"double":  avroPrimitive(avroDouble),
		"bytes":   avroPrimitive(avroBytes),
		"string":  avroPrimitive(avroString),
		// goavro's predefined logical types
		"long.timestamp-millis": avroPrimitive(avroLong),
		"long.timestamp-micros": avroPrimitive(avroLong),
		"int.time-millis":       avroPrimitive(avroInt),
		"long.time-micros":      avroPrimitive(avroLong),
		"int.date":              avroPrimitive(avroInt),
	}}
	shape, err = p.build("", v)
	return shape, p.patterns, err
}

// shapeParser mirrors goavro's codec builder; st is its symbol table.
type shapeParser struct {
	st       map[string]*avroShape
	patterns bool // a "validated-string" was built
}

// build mirrors goavro's buildCodec.
func (p *shapeParser) build(ens string, schema any) (*avroShape, error) {
	switch v := schema.(type) {
	case map[string]any:
		return p.byMap(ens, v)
	case string:
		return p.byString(ens, v, nil, false)
	case []any:
		return p.union(ens, v)
	}
	return nil, fmt.Errorf("unexpected schema element %T", schema)
}

// byMap mirrors goavro's buildCodecForTypeDescribedByMap.
func (p *shapeParser) byMap(ens string, m map[string]any) (*avroShape, error) {
	switch t := m["type"].(type) {
	case string:
		return p.byString(ens, t, m, false)
	case map[string]any:
		return p.byMap(ens, t)
	case []any:
		return p.union(ens, t)
	}
	return nil, fmt.Errorf("unexpected type %T", m["type"])
}

// byString mirrors goavro's buildCodecForTypeDescribedByString; m is nil for
// a bare type name. noLogical stands for goavro deleting an unknown
// logicalType from m and trying again.
func (p *shapeParser) byString(ens, typeName string, m map[string]any, noLogical bool) (*avroShape, error) {
	search := typeName
	lt := m["logicalType"]
	if noLogical {
		lt = nil
	}
	if lt != nil {
		search = fmt.Sprintf("%s.%s", typeName, lt)
	}
	if s, ok := p.st[search]; ok {
		if search != "bytes.decimal" {
			return s, nil
		}
		prec, ok1 := m["precision"].(float64)
		scale, ok2 := m["scale"].(float64)
		if !ok1 || !ok2 {
			return nil, errors.New("decimal needs a numeric precision and scale")
		}
		if s, ok := p.st[fmt.Sprintf("bytes.decimal.%d.%d", int(prec), int(scale))]; ok {
			return s, nil
		}
	}
	if ens != "" {
		if s, ok := p.st[ens+"."+typeName]; ok {
			return s, nil
		}
	}
	switch search {
	case "array":
		return p.container(ens, m, avroArray, "items")
	case "map":
		return p.container(ens, m, avroMap, "values")
	case "record":
		return p.record(ens, m)
	case "enum":
		syms, _ := m["symbols"].([]any)
		return p.register(ens, m, &avroShape{kind: avroEnum, count: len(syms), min: 1})
	case "fixed", "fixed.decimal":
		return p.fixed(ens, m, search)
	case "bytes.decimal":
		prec, _ := m["precision"].(float64)
		var scale float64
		if v, ok := m["scale"]; ok {
			scale, _ = v.(float64)
		}
		s, err := p.registerDefault(ens, m, search, avroPrimitive(avroBytes))
		if err == nil {
			p.st[fmt.Sprintf("bytes.decimal.%d.%d", int(prec), int(scale))] = s
		}
		return s, err
	case "string.validated-string":
		p.patterns = true
		return p.registerDefault(ens, m, search, avroPrimitive(avroString))
	}
	if lt != nil {
		return p.byString(ens, typeName, m, true)
	}
	return nil, fmt.Errorf("unknown type %q", search)
}

func (p *shapeParser) container(ens string, m map[string]any, kind avroKind, key string) (*avroShape, error) {
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("missing %s", key)
	}
	k, err := p.build(ens, v)
	if err != nil {
		return nil, err
	}
	return &avroShape{kind: kind, kids: []*avroShape{k}, min: 1}, nil
}

func (p *shapeParser) union(ens string, members []any) (*avroShape, error) {
	if len(members) == 0 {
		return nil, errors.New("empty union")
	}
	u := &avroShape{kind: avroUnion, min: 1}
	for _, m := range members {
		k, err := p.build(ens, m)
		if err != nil {
			return nil, err
		}
		u.kids = append(u.kids, k)
	}
	return u, nil
}

func (p *shapeParser) record(ens string, m map[string]any) (*avroShape, error) {
	r, err := p.register(ens, m, &avroShape{kind: avroRecord, building: true})
	if err != nil {
		return nil, err
	}
	_, ns, _ := avroFullName(ens, m)
	fields, _ := m["fields"].([]any)
	for _, f := range fields {
		fm, ok := f.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %s: field is %T, want an object", r.name, f)
		}
		k, err := p.build(ns, fm) // goavro builds a field from the field object
		if err != nil {
			return nil, err
		}
		if k.building {
			return nil, fmt.Errorf("record %s contains itself other than through a union, array or map", k.name)
		}
		r.kids = append(r.kids, k)
		r.min = min(r.min+k.min, maxAvroMin)
	}
	r.building = false
	return r, nil
}

// fixed mirrors goavro's makeFixedCodec and its sizeFromSchemaMap.
func (p *shapeParser) fixed(ens string, m map[string]any, search string) (*avroShape, error) {
	var size uint
	switch v := m["size"].(type) {
	case float64:
		if v <= 0 {
			return nil, fmt.Errorf("bad fixed size %v", v)
		}
		size = uint(v)
	case string:
		u, err := strconv.ParseUint(v, 10, 0)
		if err != nil {
			return nil, fmt.Errorf("bad fixed size %q: %w", v, err)
		}
		size = uint(u)
	default:
		return nil, fmt.Errorf("bad fixed size %v", m["size"])
	}
	s := &avroShape{kind: avroFixed, size: size, min: int(min(size, maxAvroMin))}
	if search == "fixed.decimal" {
		return p.registerDefault(ens, m, search, s)
	}
	return p.register(ens, m, s)
}

// registerDefault registers s under the name in m, or under def if m has
// none, as goavro does for its decimal and validated-string types.
func (p *shapeParser) registerDefault(ens string, m map[string]any, def string, s *avroShape) (*avroShape, error) {
	if _, ok := m["name"]; !ok {
		m = mapWith(m, "name", def)
	}
	return p.register(ens, m, s)
}

// register records the named type s in the symbol table under its full name.
func (p *shapeParser) register(ens string, m map[string]any, s *avroShape) (*avroShape, error) {
	full, _, err := avroFullName(ens, m)
	if err != nil {
		return nil, err
	}
	s.name = full
	p.st[full] = s
	return s, nil
}

// avroFullName mirrors goavro's newNameFromSchemaMap: the full name and the
// namespace of the named type m defines inside enclosing namespace ens.
func avroFullName(ens string, m map[string]any) (full, ns string, err error) {
	n, _ := m["name"].(string)
	if n == "" {
		return "", "", errors.New("named type without a name")
	}
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n, n[:i], nil
	}
	if v, ok := m["namespace"]; ok {
		ns, ok = v.(string)
		if !ok {
			return "", "", fmt.Errorf("namespace of %s is %T, want a string", n, v)
		}
	}
	if ns == "" {
		ns = ens
	}
	if ns == "" {
		return n, "", nil
	}
	return ns + "." + n, ns, nil
}

// mapWith returns a copy of m with key set to v.
func mapWith(m map[string]any, key string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}
