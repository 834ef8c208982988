package offsets

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key layout. Every key of a namespace starts with "<namespace>/", then a
// log name and a record number as 20 zero-padded decimal digits, so keys
// sort in number order and read well in a Badger dump:
//
//	<namespace>/offsets/00000000000000000042   Plan of batch 42
//	<namespace>/commits/00000000000000000042   Commit of batch 42
//	<namespace>/epochs/00000000000000000007    Epoch 7
//
// Namespace names cannot contain '/', so no namespace's keys fall under
// another's prefix. One more key, formatKey, marks the database as an
// offsets log; it has no '/', so it belongs to no namespace.
const (
	logOffsets = "offsets"
	logCommits = "commits"
	logEpochs  = "epochs"

	numberWidth = 20
)

// formatKey holds the log's on-disk layout version.
var formatKey = []byte("weir-offsets-format")

// layoutV1 is formatKey's value for the layout above.
var layoutV1 = []byte{1}

// maxNamespaceLen bounds a namespace name in bytes.
const maxNamespaceLen = 255

// validateNamespace checks that name can prefix keys: not empty, at most
// 255 bytes of UTF-8, no '/' and no control characters.
func validateNamespace(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty namespace", ErrInvalid)
	case len(name) > maxNamespaceLen:
		return fmt.Errorf("%w: namespace longer than %d bytes", ErrInvalid, maxNamespaceLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: namespace %q is not UTF-8", ErrInvalid, name)
	case strings.ContainsRune(name, '/'):
		return fmt.Errorf("%w: namespace %q contains '/'", ErrInvalid, name)
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("%w: namespace %q contains a control character", ErrInvalid, name)
	}
	return nil
}

// logPrefix returns "<namespace>/<log>/".
func logPrefix(namespace, log string) []byte {
	b := make([]byte, 0, len(namespace)+len(log)+2+numberWidth)
	b = append(b, namespace...)
	b = append(b, '/')
	b = append(b, log...)
	return append(b, '/')
}

// recordKey returns prefix followed by n as 20 zero-padded digits. n must
// not be negative.
func recordKey(prefix []byte, n int64) []byte {
	k := make([]byte, len(prefix), len(prefix)+numberWidth)
	copy(k, prefix)
	digits := strconv.AppendInt(nil, n, 10)
	for range numberWidth - len(digits) {
		k = append(k, '0')
	}
	return append(k, digits...)
}

// seekLast returns a key after every key under prefix, to start a reverse
// iteration from.
func seekLast(prefix []byte) []byte {
	return append(append([]byte(nil), prefix...), 0xff)
}

// keyNumber parses the record number of a key under prefix.
func keyNumber(prefix, key []byte) (int64, error) {
	digits := key[len(prefix):]
	allDigits := len(digits) == numberWidth && !slices.ContainsFunc(digits, func(c byte) bool { return c < '0' || c > '9' })
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if !allDigits || err != nil {
		return 0, fmt.Errorf("%w: malformed key %q", ErrCorrupt, key)
	}
	return n, nil
}
