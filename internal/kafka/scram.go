package kafka

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// scramHash names the hash of a SCRAM mechanism.
type scramHash struct {
	name string
	new  func() hash.Hash
}

var (
	scramSHA256 = scramHash{"SCRAM-SHA-256", sha256.New}
	scramSHA512 = scramHash{"SCRAM-SHA-512", sha512.New}
)

// minSCRAMIterations guards against a server (or a man in the middle)
// asking for a trivially cheap key derivation; RFC 7677 recommends 4096.
const minSCRAMIterations = 4096

// scramClient is a SCRAM client (RFC 5802) built on the standard library
// only; it implements sarama.SCRAMClient. It supports no channel binding
// ("n,," GS2 header), which is what Kafka does. A scramClient runs one
// exchange and is not safe for concurrent use; sarama creates one per
// connection through Config.Net.SASL.SCRAMClientGeneratorFunc.
type scramClient struct {
	h scramHash

	user, password, authzID string

	step            int
	clientNonce     string
	clientFirstBare string
	serverSignature []byte
	done            bool
}

func newSCRAMClient(h scramHash) *scramClient { return &scramClient{h: h} }

// Begin implements sarama.SCRAMClient.
func (c *scramClient) Begin(user, password, authzID string) error {
	if user == "" {
		return fmt.Errorf("%w: empty user name", ErrSCRAM)
	}
	c.user, c.password, c.authzID = user, password, authzID
	c.step, c.done = 0, false
	nonce := make([]byte, 24)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("%w: nonce: %w", ErrSCRAM, err)
	}
	c.clientNonce = base64.RawStdEncoding.EncodeToString(nonce)
	return nil
}

// Done implements sarama.SCRAMClient.
func (c *scramClient) Done() bool { return c.done }

// Step implements sarama.SCRAMClient: the first call (with an empty
// challenge) returns client-first-message, the second takes
// server-first-message and returns client-final-message, the third checks
// server-final-message.
func (c *scramClient) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1:
		c.clientFirstBare = "n=" + scramEscape(c.user) + ",r=" + c.clientNonce
		return c.gs2Header() + c.clientFirstBare, nil
	case 2:
		return c.clientFinal(challenge)
	case 3:
		c.done = true
		return "", c.verifyServerFinal(challenge)
	default:
		return "", fmt.Errorf("%w: unexpected step %d", ErrSCRAM, c.step)
	}
}

func (c *scramClient) gs2Header() string {
	if c.authzID == "" {
		return "n,,"
	}
	return "n,a=" + scramEscape(c.authzID) + ","
}

// clientFinal answers server-first-message "r=<nonce>,s=<salt>,i=<iter>".
func (c *scramClient) clientFinal(serverFirst string) (string, error) {
	attrs, err := scramAttrs(serverFirst)
	if err != nil {
		return "", err
	}
	if e, ok := attrs['e']; ok {
		return "", fmt.Errorf("%w: server error %q", ErrSCRAM, e)
	}
	nonce, salt64, iter64 := attrs['r'], attrs['s'], attrs['i']
	if !strings.HasPrefix(nonce, c.clientNonce) || len(nonce) == len(c.clientNonce) {
		return "", fmt.Errorf("%w: server nonce does not extend the client nonce", ErrSCRAM)
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return "", fmt.Errorf("%w: bad salt %q", ErrSCRAM, salt64)
	}
	iter, err := strconv.Atoi(iter64)
	if err != nil || iter < minSCRAMIterations {
		return "", fmt.Errorf("%w: bad iteration count %q (minimum %d)", ErrSCRAM, iter64, minSCRAMIterations)
	}

	salted, err := pbkdf2.Key(c.h.new, c.password, salt, iter, c.h.new().Size())
	if err != nil {
		return "", fmt.Errorf("%w: derive key: %w", ErrSCRAM, err)
	}
	clientKey := c.hmac(salted, []byte("Client Key"))
	storedKey := c.sum(clientKey)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(c.gs2Header())) + ",r=" + nonce
	authMessage := []byte(c.clientFirstBare + "," + serverFirst + "," + withoutProof)

	proof := c.hmac(storedKey, authMessage)
	subtle.XORBytes(proof, proof, clientKey)
	c.serverSignature = c.hmac(c.hmac(salted, []byte("Server Key")), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

// verifyServerFinal checks server-final-message "v=<signature>" (or "e=").
func (c *scramClient) verifyServerFinal(serverFinal string) error {
	attrs, err := scramAttrs(serverFinal)
	if err != nil {
		return err
	}
	if e, ok := attrs['e']; ok {
		return fmt.Errorf("%w: server error %q", ErrSCRAM, e)
	}
	got, err := base64.StdEncoding.DecodeString(attrs['v'])
	if err != nil || !hmac.Equal(got, c.serverSignature) {
		return fmt.Errorf("%w: server signature does not verify", ErrSCRAM)
	}
	return nil
}

func (c *scramClient) hmac(key, msg []byte) []byte {
	m := hmac.New(c.h.new, key)
	m.Write(msg)
	return m.Sum(nil)
}

func (c *scramClient) sum(b []byte) []byte {
	h := c.h.new()
	h.Write(b)
	return h.Sum(nil)
}

// scramAttrs parses "k=v,k=v" into a map by attribute letter. Extensions
// (unknown letters) are kept and ignored by the caller.
func scramAttrs(msg string) (map[byte]string, error) {
	attrs := make(map[byte]string)
	for field := range strings.SplitSeq(msg, ",") {
		if len(field) < 2 || field[1] != '=' {
			return nil, fmt.Errorf("%w: malformed message %q", ErrSCRAM, msg)
		}
		attrs[field[0]] = field[2:]
	}
	return attrs, nil
}

// scramEscape escapes a user name for the n= attribute (RFC 5802 §5.1).
// SASLprep normalisation is not applied: names are used as given.
func scramEscape(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}
