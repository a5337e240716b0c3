package schedule

import (
	"time"
)

// Bounds on following an open run of merged windows forward to its end. A
// schedule can be open for ever (a daily cron lasting 24h), so the search
// must stop somewhere; At then reports how far it looked instead.
const (
	// lookahead: a run still open this far past now is not followed
	// further. Each hop covers a whole window, so long windows reach it in
	// few hops (52 for a 168h window).
	lookahead = 366 * 24 * time.Hour
	// maxSteps bounds the hops, which matters for short windows: each hop
	// reaches a later start, and starts are whole minutes apart, so this is
	// at least a week of a cron firing every minute with a 1m duration.
	maxSteps = 7 * 24 * 60
)

// MaxRecheck is the longest At lets pass before it is asked again about a
// run it did not follow to its end (Outlook.Recheck).
const MaxRecheck = 24 * time.Hour

// Outlook is what a schedule says at an instant.
type Outlook struct {
	// Open is whether a window is open.
	Open bool
	// Next is the first instant after now at which Open changes, zero when
	// none is known.
	Next time.Time
	// Horizon is set when Next is zero only because At stopped following
	// an open run (docs/behaviour.md): the run stays open at least until
	// then. Zero when Next is known, or when no window lies ahead at all.
	Horizon time.Time
	// Recheck is when to ask At again: Next when it is known, the earlier
	// of Horizon and MaxRecheck after now when only Horizon is, and zero
	// when the answer never changes.
	Recheck time.Time
}

// At reports whether the schedule is open at now and when that next
// changes. A closed schedule always knows when it next opens, or that it
// never does. An open one is followed from window to window to the end of
// its run, but only so far: more than a year, or 10080 hops, and At reports
// a Horizon instead. An always-open schedule (a daily cron lasting 24h) is
// reported that way. Times are in now's location. At reads no clock, so the
// same now always gets the same answer.
func (c *Compiled) At(now time.Time) Outlook {
	// Strip the monotonic reading: every time At compares now with is
	// computed from wall clocks.
	now = now.Round(0)
	var o Outlook
	end, open := c.coverEnd(now)
	o.Open = open
	if open {
		closes, known := c.runEnd(now, end)
		if !known {
			o.Horizon = closes.In(now.Location())
			o.Recheck = minTime(o.Horizon, now.Add(MaxRecheck))
			return o
		}
		o.Next = closes
	} else if opens, ok := c.nextStart(now); ok {
		o.Next = opens
	}
	if !o.Next.IsZero() {
		o.Next = o.Next.In(now.Location())
		o.Recheck = o.Next
	}
	return o
}

// runEnd follows the run of windows that is open at now, the first of which
// ends at end, to the instant it closes. Each hop jumps to the latest end
// among the windows open at the current point, so a window that starts
// exactly where another ends (half-open intervals) extends the run. When it
// stops following, known is false and the run is open at least until the
// instant returned.
func (c *Compiled) runEnd(now, end time.Time) (_ time.Time, known bool) {
	for step := 0; ; step++ {
		later, open := c.coverEnd(end)
		if !open {
			return end, true
		}
		if step >= maxSteps || end.Sub(now) > lookahead {
			return later, false
		}
		end = later
	}
}

// coverEnd returns the latest end among the windows open at t, and whether
// any is.
func (c *Compiled) coverEnd(t time.Time) (time.Time, bool) {
	var end time.Time
	found := false
	for _, w := range c.windows {
		if e, ok := w.coverEnd(t); ok && (!found || e.After(end)) {
			end, found = e, true
		}
	}
	return end, found
}

// nextStart returns the earliest start of any window after t.
func (c *Compiled) nextStart(t time.Time) (time.Time, bool) {
	var next time.Time
	found := false
	for _, w := range c.windows {
		if s, ok := w.nextStart(t); ok && (!found || s.Before(next)) {
			next, found = s, true
		}
	}
	return next, found
}

// coverEnd returns the end of w's occurrence open at t, if one is. For a
// recurring window that is the one with the latest start by t: all last
// equally long, so no earlier one ends later.
func (w window) coverEnd(t time.Time) (time.Time, bool) {
	if w.spec == nil {
		return w.end, !t.Before(w.start) && t.Before(w.end)
	}
	loc := w.spec.Location
	shown := latestShown(t, loc)
	// A start after t-duration is at a reading after this floor: readings
	// and instants differ by less than a day, and by less than two across
	// a step back (wallclock.go).
	floor := shown.Add(-w.duration - 2*maxOffset)
	r, ok := lastReading(w.spec, shown, floor)
	if !ok {
		return time.Time{}, false
	}
	end := firstShowing(r, loc).Add(w.duration)
	return end, end.After(t)
}

// nextStart returns w's first start after t, if it has one.
func (w window) nextStart(t time.Time) (time.Time, bool) {
	if w.spec == nil {
		return w.start, w.start.After(t)
	}
	loc := w.spec.Location
	r, ok := nextReading(w.spec, latestShown(t, loc))
	if !ok {
		return time.Time{}, false
	}
	return firstShowing(r, loc), true
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
