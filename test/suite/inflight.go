package suite

import "sync/atomic"

// InFlight counts the requests a test server holds now and the most it
// held at once. Safe for concurrent use; the zero value is ready.
type InFlight struct {
	now, peak atomic.Int64
}

// Enter counts one more request held; call the returned func when it ends.
func (g *InFlight) Enter() (leave func()) {
	n := g.now.Add(1)
	for {
		p := g.peak.Load()
		if n <= p || g.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return func() { g.now.Add(-1) }
}

// Now is how many requests are held now.
func (g *InFlight) Now() int64 { return g.now.Load() }

// Peak is the most requests held at once since the start or the last
// ResetPeak.
func (g *InFlight) Peak() int64 { return g.peak.Load() }

// ResetPeak starts the peak over from zero.
func (g *InFlight) ResetPeak() { g.peak.Store(0) }
