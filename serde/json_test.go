package serde

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

type jsonClick struct {
	User  string            `json:"user"`
	Count int64             `json:"count"`
	Tags  []string          `json:"tags,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
	Ref   *string           `json:"ref"`
}

func TestJSONRoundTrip(t *testing.T) {
	ref := "home"
	for _, tc := range []struct {
		name string
		v    jsonClick
		enc  string
	}{
		{"zero", jsonClick{}, `{"user":"","count":0,"ref":null}`},
		{"full", jsonClick{User: "ann", Count: 3, Tags: []string{"a"}, Attrs: map[string]string{"k": "v"}, Ref: &ref},
			`{"user":"ann","count":3,"tags":["a"],"attrs":{"k":"v"},"ref":"home"}`},
		{"large int exact", jsonClick{Count: math.MaxInt64}, `{"user":"","count":9223372036854775807,"ref":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := JSON[jsonClick]()
			b, err := s.Serialize("t", tc.v)
			require.NoError(t, err)
			require.JSONEq(t, tc.enc, string(b))
			got, err := s.Deserialize("t", b)
			require.NoError(t, err)
			require.Equal(t, tc.v, got)
		})
	}
}

func TestJSONDeserialize(t *testing.T) {
	s := JSON[jsonClick]()
	for _, tc := range []struct {
		name    string
		in      []byte
		want    jsonClick
		wantErr string
	}{
		{name: "nil is a tombstone", in: nil},
		{name: "null", in: []byte(`null`)},
		{name: "unknown fields ignored", in: []byte(`{"user":"bo","extra":[1,2]}`), want: jsonClick{User: "bo"}},
		{name: "surrounding space", in: []byte(" {\"count\":2}\n"), want: jsonClick{Count: 2}},
		{name: "empty", in: []byte{}, wantErr: "unexpected end of JSON input"},
		{name: "truncated", in: []byte(`{"user":"b`), wantErr: "unexpected end of JSON input"},
		{name: "malformed", in: []byte(`{user:1}`), wantErr: "invalid character"},
		{name: "trailing data", in: []byte(`{} {}`), wantErr: "invalid character '{' after top-level value"},
		{name: "type mismatch", in: []byte(`{"count":"three"}`), wantErr: "cannot unmarshal string"},
		{name: "overflow", in: []byte(`{"count":9223372036854775808}`), wantErr: "cannot unmarshal number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Deserialize("t", tc.in)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, ErrDeserialize)
			require.ErrorContains(t, err, "serde: cannot deserialize: json: "+tc.wantErr)
			require.Zero(t, got, "no partial value on error")
		})
	}
	t.Run("json error wrapped", func(t *testing.T) {
		_, err := s.Deserialize("t", []byte(`{"user":`+"\x01"))
		var syn *json.SyntaxError
		require.ErrorAs(t, err, &syn)
	})
}

func TestJSONSerializeError(t *testing.T) {
	_, err := JSON[float64]().Serialize("t", math.NaN())
	require.ErrorIs(t, err, ErrSerialize)
	var uv *json.UnsupportedValueError
	require.ErrorAs(t, err, &uv)
	require.ErrorContains(t, err, "serde: cannot serialize: json: ")

	_, err = JSON[chan int]().Serialize("t", make(chan int))
	require.ErrorIs(t, err, ErrSerialize)
}

func TestJSONNilPointerIsNull(t *testing.T) {
	b, err := JSON[*jsonClick]().Serialize("t", nil)
	require.NoError(t, err)
	require.Equal(t, "null", string(b))
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"user":"ann","count":3,"tags":["a","b"],"attrs":{"k":"v"},"ref":"x"}`,
		`{}`, `null`, ``, `{"count":1e3}`, `{"tags":[null]}`, `{"ref":null}`,
		`[1,2]`, `"str"`, `{"user":"\ud800"}`, `{"user":"` + "\xff" + `"}`, `{"count":-0}`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(nil))
	s := JSON[jsonClick]()
	anyS := JSON[any]()
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := anyS.Deserialize("t", b); err != nil {
			require.ErrorIs(t, err, ErrDeserialize)
		}
		v, err := s.Deserialize("t", b)
		if err != nil {
			require.ErrorIs(t, err, ErrDeserialize)
			return
		}
		// Values need not survive (omitempty turns [] into nil), but the
		// encoding must be a fixed point after one round.
		enc, err := s.Serialize("t", v)
		require.NoError(t, err)
		v2, err := s.Deserialize("t", enc)
		require.NoError(t, err)
		enc2, err := s.Serialize("t", v2)
		require.NoError(t, err)
		require.Equal(t, string(enc), string(enc2))
	})
}
