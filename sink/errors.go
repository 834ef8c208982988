package sink

import "errors"

// ErrFenced is wrapped by a Write refused because a newer owner of the
// task claimed it (a higher generation): the writer is a zombie. The
// engine rewinds, drops its state and rejoins the group.
var ErrFenced = errors.New("sink: fenced by a newer owner of the task")

// ErrPermanent is wrapped by sink errors no retry can heal: a table that
// does not exist, a permission denied, a statement the store rejects.
// The application stops.
var ErrPermanent = errors.New("sink: permanent failure")
