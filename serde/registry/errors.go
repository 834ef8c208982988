package registry

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/serde"
)

var (
	// ErrConfig is wrapped by every error New returns for invalid options.
	ErrConfig = errors.New("registry: invalid configuration")
	// ErrIncompatible is matched (errors.Is) by an [*Error] with HTTP status
	// 409: the registry refused to register the schema because it is not
	// compatible with the subject's earlier versions under the subject's
	// compatibility level.
	ErrIncompatible = errors.New("registry: schema incompatible")
	// ErrNotPinnedVersion is wrapped by the error IDForSchema returns, with
	// WithSubjectVersion, when the subject has the schema but its pinned
	// version is another one.
	ErrNotPinnedVersion = errors.New("registry: schema is not the pinned version")
)

// Error is the error of a registry operation that failed: a status other
// than 2xx, or no response at all. errors.Is(err, serde.ErrSchemaNotFound)
// holds for status 404, errors.Is(err, ErrIncompatible) for 409; Unwrap
// returns the cause, an *sr.ResponseError for a response (with the
// registry's error_code and message) or the transport's error.
type Error struct {
	// Op is what the client asked: "get schema", "register schema", "look
	// up schema" or "get version".
	Op string
	// Subject is the subject asked about; empty for "get schema".
	Subject string
	// ID is the schema id asked about; 0 except for "get schema".
	ID int32
	// Version is the subject version asked about for "get version".
	Version int
	// Status is the HTTP status of the last response; 0 if there was none.
	Status int
	// Attempts is how many requests were sent (1 plus the retries).
	Attempts int
	// Err is the cause.
	Err error
}

// Error says what was asked about, the status, and the registry's message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("registry: ")
	b.WriteString(e.Op)
	switch {
	case e.Op == opGetSchema:
		fmt.Fprintf(&b, " id %d", e.ID)
	case e.Op == opGetVersion && e.Version == LatestVersion:
		fmt.Fprintf(&b, " latest of subject %q", e.Subject)
	case e.Op == opGetVersion:
		fmt.Fprintf(&b, " %d of subject %q", e.Version, e.Subject)
	default:
		fmt.Fprintf(&b, " under subject %q", e.Subject)
	}
	var re *sr.ResponseError
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	switch {
	case errors.As(e.Err, &re):
		if re.ErrorCode != 0 {
			fmt.Fprintf(&b, " (error code %d)", re.ErrorCode)
		}
		if msg := strings.TrimSpace(re.Error()); msg != "" {
			b.WriteString(": ")
			b.WriteString(msg)
		}
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether e is a 404 (target serde.ErrSchemaNotFound) or a 409
// (target ErrIncompatible).
func (e *Error) Is(target error) bool {
	switch target {
	case serde.ErrSchemaNotFound:
		return e.Status == http.StatusNotFound
	case ErrIncompatible:
		return e.Status == http.StatusConflict
	}
	return false
}

// The operations of Error.Op.
const (
	opGetSchema  = "get schema"
	opRegister   = "register schema"
	opLookup     = "look up schema"
	opGetVersion = "get version"
)
