package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Bounds on following an open run of merged windows forward to its end. A
// schedule can be open for ever (a daily cron lasting 24h), so the search
// must stop somewhere; At then reports no transition ahead.
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

// At reports whether the schedule is open at now and the next instant after
// now at which that changes. ok is false, and next zero, when there is no
// such instant: no window starts after now (robfig gives up five years
// ahead), or the state stays open beyond what At follows: more than a year,
// or 10080 hops from window to window. An always-open schedule (a daily
// cron lasting 24h) is reported that way. next is in now's location. At
// reads no clock, so the same now always gets the same answer.
func (c *Compiled) At(now time.Time) (open bool, next time.Time, ok bool) {
	end, open := c.coverEnd(now)
	if open {
		next, ok = c.runEnd(now, end)
	} else {
		next, ok = c.nextStart(now)
	}
	if !ok {
		return open, time.Time{}, false
	}
	return open, next.In(now.Location()), true
}

// runEnd follows the run of windows that is open at now, the first of which
// ends at end, to the instant it closes. Each hop jumps to the latest end
// among the windows open at the current point, so a window that starts
// exactly where another ends (half-open intervals) extends the run.
func (c *Compiled) runEnd(now, end time.Time) (time.Time, bool) {
	for step := 0; ; step++ {
		later, open := c.coverEnd(end)
		if !open {
			return end, true
		}
		if step >= maxSteps || end.Sub(now) > lookahead {
			return time.Time{}, false
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
// recurring window that is the latest start in (t-duration, t], which also
// gives the latest end.
func (w window) coverEnd(t time.Time) (time.Time, bool) {
	if w.spec == nil {
		return w.end, !t.Before(w.start) && t.Before(w.end)
	}
	start, ok := latestFire(w.spec, t.Add(-w.duration), t)
	return start.Add(w.duration), ok
}

// nextStart returns w's first start after t, if it has one.
func (w window) nextStart(t time.Time) (time.Time, bool) {
	if w.spec == nil {
		return w.start, w.start.After(t)
	}
	return fireAfter(w.spec, t)
}

// fireAfter returns spec's first fire after t. robfig searches five years
// ahead and returns the zero time when it finds none, as for a cron that can
// never fire (30 February); that is taken as "never".
func fireAfter(spec *cron.SpecSchedule, t time.Time) (time.Time, bool) {
	next := spec.Next(endOfMinute(t, spec.Location))
	return next, !next.IsZero()
}

// endOfMinute returns the last whole second of t's UTC minute, or t if that
// is not later. robfig's Next from there finds the same fire as from t, since
// fires fall on second 0 of loc's minutes (the standard parser has no seconds
// field), but without stepping through the rest of the minute a second at a
// time, which is most of its cost. loc's minutes are UTC's only while its
// offset is whole minutes, as in every zone since 1972; Liberia's was
// -0:44:30 until then.
func endOfMinute(t time.Time, loc *time.Location) time.Time {
	end := t.Truncate(time.Minute).Add(59 * time.Second)
	if !end.After(t) || !wholeMinuteOffset(t, loc) || !wholeMinuteOffset(end, loc) {
		return t
	}
	return end
}

// wholeMinuteOffset reports whether loc's UTC offset at t is whole minutes.
func wholeMinuteOffset(t time.Time, loc *time.Location) bool {
	_, offset := t.In(loc).Zone()
	return offset%60 == 0
}

// firesIn reports whether spec fires in (after, by].
func firesIn(spec *cron.SpecSchedule, after, by time.Time) bool {
	next, ok := fireAfter(spec, after)
	return ok && !next.After(by)
}

// walkFires is how many fires latestFire steps through one by one before
// bisecting: stepping is cheaper while fires are few, as they usually are.
const walkFires = 2

// latestFire returns spec's latest fire in (after, by], if any.
//
// robfig only searches forward. Stepping from fire to fire costs a call per
// fire: 10080 for a cron firing every minute with a 168h duration. So after a
// few steps it searches instead for the point x where "spec fires in (x, by]"
// turns false, which is that latest fire: first galloping back from by
// (cheap when fires are dense, as they are once stepping has not reached by),
// then bisecting. Fires fall on whole seconds, so once the bracket is a second
// wide, the first fire after its low end is the answer: about 40 calls at most.
func latestFire(spec *cron.SpecSchedule, after, by time.Time) (time.Time, bool) {
	fire, ok := fireAfter(spec, after)
	if !ok || fire.After(by) {
		return time.Time{}, false
	}
	prev := after
	for range walkFires {
		next, ok := fireAfter(spec, fire)
		if !ok || next.After(by) {
			return fire, true
		}
		prev, fire = fire, next
	}
	lo, hi := prev, by // invariant: spec fires in (lo, by] and not in (hi, by]
	for back := time.Second; back < by.Sub(lo); back *= 2 {
		x := by.Add(-back)
		if firesIn(spec, x, by) {
			lo = x
			break
		}
		hi = x
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if firesIn(spec, mid, by) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return fireAfter(spec, lo)
}
