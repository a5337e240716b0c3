// Package logging holds the manager's log sink wrappers.
package logging

import (
	"slices"

	"github.com/go-logr/logr"
)

// Lazy returns a logger that hands its key-value pairs to l's sink only
// when it writes a line, and then with the line's own: the sink sees one
// Info or Error call carrying the values of every WithValues call before
// it, in order, and no WithValues call at all. controller-runtime makes a
// logger with the controller, the object and a reconcile ID for every
// reconcile, and zap encodes such pairs when the logger is made, whether
// anything is logged or not; zap's sampler then drops most of a flip's
// "Updated Ingress" lines after encoding their values. In a flip of 500
// that was 6% of the manager's CPU (docs/benchmarks.md).
//
// For the values the manager and controller-runtime log (strings, numbers,
// object references) zap writes the same lines either way: a logger's
// values come before the line's. Two things differ by design: a value is
// encoded when the line is written, so a value changed in place after
// WithValues shows as it is then (the list itself is copied); and
// controller-runtime's encoder writes a runtime.Object among a line's
// values as its kind, namespace and name, where it writes one given to
// WithValues in full. A WithValues call zap would complain about (a
// dangling key, a key that is not a string) goes to the base at once,
// which reports it where it was made.
func Lazy(l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if sink == nil {
		return l
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		// One frame more between the caller and the sink: ours.
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&lazySink{base: sink})
}

// lazySink keeps the WithValues calls made on it and replays them on its
// base sink when a line is written.
type lazySink struct {
	base logr.LogSink
	// pending are the key-value lists of the WithValues calls not yet
	// handed to base, oldest first. Never appended to in place: loggers
	// derived from one another share its prefix.
	pending [][]any
}

var (
	_ logr.LogSink          = (*lazySink)(nil)
	_ logr.CallDepthLogSink = (*lazySink)(nil)
)

// Init does nothing: the base sink was initialised by its own logger.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.base.Info(level, msg, s.with(keysAndValues)...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.base.Error(err, msg, s.with(keysAndValues)...)
}

// with is the pending values followed by keysAndValues.
func (s *lazySink) with(keysAndValues []any) []any {
	if len(s.pending) == 0 {
		return keysAndValues
	}
	n := len(keysAndValues)
	for _, kv := range s.pending {
		n += len(kv)
	}
	all := make([]any, 0, n)
	for _, kv := range s.pending {
		all = append(all, kv...)
	}
	return append(all, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	if len(keysAndValues) == 0 {
		return s
	}
	if !wellFormed(keysAndValues) {
		// The base reports it now, at the caller, as it would without us;
		// deferred, zapr would drop the line's own values after it too.
		return &lazySink{base: s.resolved().WithValues(keysAndValues...)}
	}
	pending := make([][]any, len(s.pending), len(s.pending)+1)
	copy(pending, s.pending)
	// A copy: the caller may reuse its slice once WithValues returns.
	return &lazySink{base: s.base, pending: append(pending, slices.Clone(keysAndValues))}
}

// wellFormed tells whether keysAndValues are pairs with a string key each.
func wellFormed(keysAndValues []any) bool {
	if len(keysAndValues)%2 != 0 {
		return false
	}
	for i := 0; i < len(keysAndValues); i += 2 {
		if _, ok := keysAndValues[i].(string); !ok {
			return false
		}
	}
	return true
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{base: s.base.WithName(name), pending: s.pending}
}

func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	cd, ok := s.base.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &lazySink{base: cd.WithCallDepth(depth), pending: s.pending}
}

// resolved is the base sink with the pending values handed to it.
func (s *lazySink) resolved() logr.LogSink {
	sink := s.base
	for _, kv := range s.pending {
		sink = sink.WithValues(kv...)
	}
	return sink
}
