package serde

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	s := String()
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"nil", nil, ""},
		{"empty", []byte{}, ""},
		{"ascii", []byte("hello"), "hello"},
		{"utf8", []byte("größe ✓"), "größe ✓"},
		{"invalid utf8 kept", []byte{0xff, 0x00, 'a'}, "\xff\x00a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Deserialize("t", tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			b, err := s.Serialize("t", got)
			require.NoError(t, err)
			require.NotNil(t, b)
			require.Equal(t, []byte(tc.want), b)
		})
	}
}

func TestStringCopies(t *testing.T) {
	in := []byte("abc")
	got, err := String().Deserialize("t", in)
	require.NoError(t, err)
	in[0] = 'x'
	require.Equal(t, "abc", got)
}

func TestBytes(t *testing.T) {
	s := Bytes()
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"data", []byte{0, 1, 2, 0xff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Deserialize("t", tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.in == nil, got == nil, "nil stays nil, empty stays empty")
			require.Equal(t, tc.in, got)
			b, err := s.Serialize("t", got)
			require.NoError(t, err)
			require.Equal(t, tc.in, b)
		})
	}
}

func TestInt64(t *testing.T) {
	s := Int64()
	for _, tc := range []struct {
		name string
		v    int64
		enc  []byte
	}{
		{"zero", 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"one", 1, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{"minus one", -1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"big-endian", 0x0102030405060708, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{"max", math.MaxInt64, []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"min", math.MinInt64, []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Serialize("t", tc.v)
			require.NoError(t, err)
			require.Equal(t, tc.enc, b)
			got, err := s.Deserialize("t", b)
			require.NoError(t, err)
			require.Equal(t, tc.v, got)
		})
	}
}

func TestFloat64(t *testing.T) {
	s := Float64()
	for _, tc := range []struct {
		name string
		v    float64
		enc  []byte
	}{
		{"zero", 0, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{"negative zero", math.Copysign(0, -1), []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"one", 1, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}},
		{"minus two and a half", -2.5, []byte{0xc0, 0x04, 0, 0, 0, 0, 0, 0}},
		{"+inf", math.Inf(1), []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 0}},
		{"smallest", math.SmallestNonzeroFloat64, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Serialize("t", tc.v)
			require.NoError(t, err)
			require.Equal(t, tc.enc, b)
			got, err := s.Deserialize("t", b)
			require.NoError(t, err)
			require.Equal(t, math.Float64bits(tc.v), math.Float64bits(got))
		})
	}
	t.Run("NaN payload kept", func(t *testing.T) {
		nan := math.Float64frombits(0x7ff8_0000_dead_beef)
		b, err := s.Serialize("t", nan)
		require.NoError(t, err)
		got, err := s.Deserialize("t", b)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(nan), math.Float64bits(got))
	})
}

func TestFixed8Lengths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"nil is a tombstone", nil, ""},
		{"empty", []byte{}, "want 8 bytes, got 0"},
		{"short", []byte{1, 2, 3}, "want 8 bytes, got 3"},
		{"seven", make([]byte, 7), "want 8 bytes, got 7"},
		{"long", make([]byte, 9), "want 8 bytes, got 9"},
		{"kafka int32", []byte{0, 0, 0, 1}, "want 8 bytes, got 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, errI := Int64().Deserialize("t", tc.in)
			f, errF := Float64().Deserialize("t", tc.in)
			require.Zero(t, i)
			require.Zero(t, f)
			if tc.wantErr == "" {
				require.NoError(t, errI)
				require.NoError(t, errF)
				return
			}
			require.ErrorIs(t, errI, ErrDeserialize)
			require.ErrorIs(t, errF, ErrDeserialize)
			require.EqualError(t, errI, "serde: cannot deserialize: int64: "+tc.wantErr)
			require.EqualError(t, errF, "serde: cannot deserialize: float64: "+tc.wantErr)
		})
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", "größe", "\xff\xfe", "\x00"} {
		f.Add([]byte(s))
	}
	s := String()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Deserialize("t", b)
		require.NoError(t, err)
		enc, err := s.Serialize("t", v)
		require.NoError(t, err)
		require.Equal(t, string(b), string(enc))
	})
}

func FuzzBytes(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0xff})
	s := Bytes()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Deserialize("t", b)
		require.NoError(t, err)
		enc, err := s.Serialize("t", v)
		require.NoError(t, err)
		require.Equal(t, b, enc)
	})
}

func FuzzInt64(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 42})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(make([]byte, 9))
	s := Int64()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Deserialize("t", b)
		if b != nil && len(b) != 8 {
			require.ErrorIs(t, err, ErrDeserialize)
			return
		}
		require.NoError(t, err)
		enc, err := s.Serialize("t", v)
		require.NoError(t, err)
		if b == nil {
			require.Zero(t, v)
			return
		}
		require.Equal(t, b, enc)
	})
}

func FuzzFloat64(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1})
	f.Add(make([]byte, 16))
	s := Float64()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := s.Deserialize("t", b)
		if b != nil && len(b) != 8 {
			require.ErrorIs(t, err, ErrDeserialize)
			return
		}
		require.NoError(t, err)
		enc, err := s.Serialize("t", v)
		require.NoError(t, err)
		if b == nil {
			require.Zero(t, v)
			return
		}
		require.Equal(t, b, enc, "every bit pattern survives, NaNs included")
	})
}
