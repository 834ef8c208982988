package kafka

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// TestSASLAgainstKfake authenticates with every mechanism against kfake's
// SASL server, and fails with a wrong password.
func TestSASLAgainstKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.Superuser(SASLPlain, "plain-user", "plain-pass"),
		kfake.Superuser(SASLScramSHA256, "scram-user", "s256-pass"),
		kfake.Superuser(SASLScramSHA512, "scram-user", "s512-pass"),
		kfake.SeedTopics(2, "t"))
	require.NoError(t, err)
	defer c.Close()

	for _, s := range []SASL{
		{SASLPlain, "plain-user", "plain-pass"},
		{SASLScramSHA256, "scram-user", "s256-pass"},
		{SASLScramSHA512, "scram-user", "s512-pass"},
	} {
		t.Run(s.Mechanism, func(t *testing.T) {
			a, err := NewAdmin(Config{Brokers: c.ListenAddrs(), SASL: &s})
			require.NoError(t, err)
			defer a.Close()
			counts, err := a.PartitionCounts(context.Background(), []string{"t"})
			require.NoError(t, err)
			require.Equal(t, map[string]int32{"t": 2}, counts)

			bad := s
			bad.Password = "wrong"
			_, err = NewAdmin(Config{Brokers: c.ListenAddrs(), SASL: &bad})
			require.Error(t, err)
		})
	}
}

// TestSCRAMRFC7677Vector replays the SCRAM-SHA-256 example of RFC 7677 §3.
func TestSCRAMRFC7677Vector(t *testing.T) {
	c := newSCRAMClient(scramSHA256)
	require.NoError(t, c.Begin("user", "pencil", ""))
	c.clientNonce = "rOprNGfwEbeRWgbNEkqO"
	first, err := c.Step("")
	require.NoError(t, err)
	require.Equal(t, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO", first)

	final, err := c.Step("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	require.NoError(t, err)
	require.Equal(t, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", final)
	require.False(t, c.Done())

	_, err = c.Step("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
	require.NoError(t, err)
	require.True(t, c.Done())
}

func TestSCRAMRejectsBadServers(t *testing.T) {
	begin := func() *scramClient {
		c := newSCRAMClient(scramSHA256)
		require.NoError(t, c.Begin("user", "pencil", ""))
		c.clientNonce = "abc"
		_, err := c.Step("")
		require.NoError(t, err)
		return c
	}
	for name, serverFirst := range map[string]string{
		"foreign nonce": "r=xyz123,s=c2FsdA==,i=4096",
		"same nonce":    "r=abc,s=c2FsdA==,i=4096",
		"cheap":         "r=abcdef,s=c2FsdA==,i=1",
		"bad salt":      "r=abcdef,s=!!,i=4096",
		"malformed":     "garbage",
		"server error":  "e=other-error",
		"no iterations": "r=abcdef,s=c2FsdA==",
	} {
		_, err := begin().Step(serverFirst)
		require.ErrorIs(t, err, ErrSCRAM, name)
	}

	// A server signature that does not verify (a server that does not know
	// the password) is an error, even though the exchange completes.
	c := begin()
	_, err := c.Step("r=abcdef,s=c2FsdA==,i=4096")
	require.NoError(t, err)
	_, err = c.Step("v=" + base64.StdEncoding.EncodeToString([]byte("forged")))
	require.ErrorIs(t, err, ErrSCRAM)

	_, err = c.Step("")
	require.ErrorIs(t, err, ErrSCRAM, "no fourth step")
	require.ErrorIs(t, newSCRAMClient(scramSHA256).Begin("", "p", ""), ErrSCRAM)
}

func TestSCRAMEscapesNames(t *testing.T) {
	c := newSCRAMClient(scramSHA512)
	require.NoError(t, c.Begin("a=b,c", "p", "z,d"))
	first, err := c.Step("")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "n,a=z=2Cd,n=a=3Db=2Cc,r="), first)
}
