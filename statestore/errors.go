package statestore

import "errors"

// ErrMalformedKey is wrapped by the errors DecodeWindowKey and
// DecodeSessionKey return for bytes they cannot decode.
var ErrMalformedKey = errors.New("statestore: malformed key")

// ErrStagingFull is wrapped by the error a staged store's write returns when
// the write would take the staged bytes past the overlay's limit. The write
// is not staged; the engine should commit the epoch early, or abort it, and
// never drop the write silently. Test with errors.Is; the error is a
// *StagingFullError.
var ErrStagingFull = errors.New("statestore: staged writes exceed the limit")

// ErrClosed is returned by every operation on a closed store, and by an
// iterator used after it or its store was closed. Close itself returns nil
// when called again.
var ErrClosed = errors.New("statestore: closed")

// ErrInvalidSession is wrapped by the error SessionStore.Put returns for a
// session that ends before it starts.
var ErrInvalidSession = errors.New("statestore: session ends before it starts")

// ErrCorruptVersion is wrapped by the error a versioned store returns for
// bytes in its key-value store that are not in its layout.
var ErrCorruptVersion = errors.New("statestore: corrupt versioned entry")
