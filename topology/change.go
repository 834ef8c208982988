package topology

import (
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/serde"
)

// change is an update of a re-grouped table entry as its group sees it:
// the value leaving the group (old) and the value entering it (new), one or
// both. Kafka Streams' Change.
type change[V any] struct {
	newV, oldV     V
	hasNew, hasOld bool
}

// changeSerde encodes changes in Kafka Streams' repartition format (its
// ChangedSerializer), the last byte saying which values are there:
//
//	old:  {old bytes}{0}
//	new:  {new bytes}{1}
//	both: {varint len(new)}{new bytes}{old bytes}{2}
//
// Flags 3 to 5, the same with an is-latest byte before the flag (written
// by Kafka Streams for versioned tables), are read too.
type changeSerde[V any] struct {
	inner serde.Serde[V]
}

func (s changeSerde[V]) Serialize(topic string, c change[V]) ([]byte, error) {
	var nb, ob []byte
	var err error
	if c.hasNew {
		if nb, err = s.inner.Serialize(topic, c.newV); err != nil {
			return nil, err
		}
	}
	if c.hasOld {
		if ob, err = s.inner.Serialize(topic, c.oldV); err != nil {
			return nil, err
		}
	}
	switch {
	case c.hasNew && c.hasOld:
		out := binary.AppendVarint(make([]byte, 0, binary.MaxVarintLen32+len(nb)+len(ob)+1), int64(len(nb)))
		out = append(append(append(out, nb...), ob...), 2)
		return out, nil
	case c.hasNew:
		return append(append(make([]byte, 0, len(nb)+1), nb...), 1), nil
	case c.hasOld:
		return append(append(make([]byte, 0, len(ob)+1), ob...), 0), nil
	}
	return nil, fmt.Errorf("%w: a change with neither an old nor a new value", serde.ErrSerialize)
}

func (s changeSerde[V]) Deserialize(topic string, b []byte) (change[V], error) {
	var c change[V]
	if b == nil {
		return c, nil
	}
	if len(b) == 0 {
		return c, fmt.Errorf("%w: empty change", serde.ErrDeserialize)
	}
	flag, body := b[len(b)-1], b[:len(b)-1]
	if flag >= 3 && flag <= 5 { // an is-latest byte before the flag
		if len(body) == 0 {
			return c, fmt.Errorf("%w: change flag %d without its is-latest byte", serde.ErrDeserialize, flag)
		}
		flag, body = flag-3, body[:len(body)-1]
	}
	var nb, ob []byte
	switch flag {
	case 0:
		ob = body
	case 1:
		nb = body
	case 2:
		n, w := binary.Varint(body)
		if w <= 0 || n < 0 || n > int64(len(body)-w) {
			return c, fmt.Errorf("%w: change: bad new value length", serde.ErrDeserialize)
		}
		nb, ob = body[w:w+int(n)], body[w+int(n):]
	default:
		return c, fmt.Errorf("%w: unknown change flag %d", serde.ErrDeserialize, flag)
	}
	var err error
	if nb != nil {
		if c.newV, err = s.inner.Deserialize(topic, nb); err != nil {
			return c, err
		}
		c.hasNew = true
	}
	if ob != nil {
		if c.oldV, err = s.inner.Deserialize(topic, ob); err != nil {
			return c, err
		}
		c.hasOld = true
	}
	return c, nil
}
