package schedule

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

// A recurring window starts at readings of its zone's wall clock, such as
// 02:30 on 29 March. Most readings name one instant, but on a
// daylight-saving day some name none (the clocks jump over them) and some
// name two (the clocks go back over them). docs/behaviour.md states one rule
// for all three: a reading starts at the first instant at which the wall
// clock shows that reading or a later one. That is the instant itself, the
// first instant after a jump, or the first of two occurrences; and a day is
// never lost, even where the jump is over midnight (Africa/Cairo,
// Asia/Beirut, America/Santiago), which robfig/cron's own Next steps over.
//
// The rule is monotonic: a later reading never starts earlier. So the next
// start after an instant is where the first later reading starts, and the
// last start by an instant is where the last earlier reading starts, and
// both are found on the calendar alone, with offsets applied once at the end.
//
// Readings are held as time.Time values in UTC whose fields are those of the
// wall clock, so that calendar arithmetic on them knows nothing of offsets
// (and a day is 24 hours: time.Time.Truncate(24*time.Hour) is midnight).

// maxOffset bounds how far any zone's wall clock has ever been from UTC
// (under 16 hours, Manila's before 1845); no instant further than this from
// a reading taken as UTC shows it.
const maxOffset = 26 * time.Hour

// maxSetBack bounds how long after the clocks go back they still show
// readings already passed: as long as the step back, an hour or two now, a
// whole day when Alaska changed sides of the date line in 1867.
const maxSetBack = 48 * time.Hour

// reading is the reading of loc's wall clock at t.
func reading(t time.Time, loc *time.Location) time.Time {
	_, offset := t.In(loc).Zone()
	return t.Add(time.Duration(offset) * time.Second).UTC()
}

// firstShowing returns the first instant at which loc's wall clock shows r
// or a later reading (the rule above).
func firstShowing(r time.Time, loc *time.Location) time.Time {
	// Walk the zone's periods of constant offset from well before r: within
	// one the clock runs evenly, so the first instant there showing r or
	// later is where it shows r, or where the period begins when that is
	// already past r (the clocks jumped over r into it).
	begin := r.Add(-maxOffset)
	for {
		_, offset := begin.In(loc).Zone()
		end := periodEnd(begin, loc)
		at := r.Add(-time.Duration(offset) * time.Second)
		if end.IsZero() || at.Before(end) {
			if at.Before(begin) {
				return begin
			}
			return at
		}
		begin = end
	}
}

// periodEnd returns the end of the period of constant offset that t is in,
// zero when it never ends. Past a zone's table of transitions, where Go
// computes them from the zone's rule, time.Time.ZoneBounds also ends periods
// where nothing changes, at the end of a year, which is harmless here; but
// in a leap year it ends them a day early, at or before t itself
// (golang/go#81583), where a walk from period to period would stand still.
func periodEnd(t time.Time, loc *time.Location) time.Time {
	_, end := t.In(loc).ZoneBounds()
	if !end.IsZero() && !end.After(t) {
		// That is 31 December 00:00 UTC; the rule's periods resume at
		// the next year's start, a day later.
		end = end.Add(24 * time.Hour)
	}
	return end
}

// latestShown returns the latest reading loc's wall clock has shown at or
// before t: the reading at t, unless the clocks went back lately and showed
// later readings before they did. A reading has started by t exactly when it
// is not after this one.
func latestShown(t time.Time, loc *time.Location) time.Time {
	latest := reading(t, loc)
	start, _ := t.In(loc).ZoneBounds()
	for !start.IsZero() && t.Sub(start) < maxSetBack {
		before := start.Add(-time.Nanosecond)
		if r := reading(before, loc); r.After(latest) {
			latest = r
		}
		start, _ = before.In(loc).ZoneBounds()
	}
	return latest
}

// searchYears is how far nextReading looks. Every month and day of the
// month comes back within a year, except 29 February, which can take eight
// (2096 to 2104); so a cron not found within nine years never fires.
const searchYears = 9

// nextReading returns the first reading after r that spec names.
func nextReading(spec *cron.SpecSchedule, r time.Time) (time.Time, bool) {
	// Cron readings fall on whole minutes: the standard parser has no
	// seconds field.
	r = r.Truncate(time.Minute).Add(time.Minute)
	day := r.Truncate(24 * time.Hour)
	from := int(r.Sub(day) / time.Minute)
	for limit := day.Add(searchYears * 366 * 24 * time.Hour); day.Before(limit); from = 0 {
		y, m, d := day.Date()
		if spec.Month&(1<<uint(m)) == 0 {
			day = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if dayMatches(spec, d, day.Weekday()) {
			if minute, ok := firstMinute(spec, from); ok {
				return day.Add(time.Duration(minute) * time.Minute), true
			}
		}
		day = day.Add(24 * time.Hour)
	}
	return time.Time{}, false
}

// lastReading returns the last reading at or before r that spec names, if
// one is not before floor.
func lastReading(spec *cron.SpecSchedule, r, floor time.Time) (time.Time, bool) {
	day := r.Truncate(24 * time.Hour)
	to := int(r.Sub(day) / time.Minute)
	for first := floor.Truncate(24 * time.Hour); !day.Before(first); to = 24*60 - 1 {
		y, m, d := day.Date()
		if spec.Month&(1<<uint(m)) == 0 {
			// Day 0 of a month is the last day of the one before.
			day = time.Date(y, m, 0, 0, 0, 0, 0, time.UTC)
			continue
		}
		if dayMatches(spec, d, day.Weekday()) {
			if minute, ok := lastMinute(spec, to); ok {
				found := day.Add(time.Duration(minute) * time.Minute)
				return found, !found.Before(floor)
			}
		}
		day = day.Add(-24 * time.Hour)
	}
	return time.Time{}, false
}

// starBit marks a field written as * (robfig/cron's own constant, which it
// does not export).
const starBit = 1 << 63

// dayMatches is robfig/cron's rule, a CronJob's and Vixie cron's: when the
// day of month or the day of week is *, a day must match both fields,
// otherwise either.
func dayMatches(spec *cron.SpecSchedule, dayOfMonth int, weekday time.Weekday) bool {
	dom := spec.Dom&(1<<uint(dayOfMonth)) != 0
	dow := spec.Dow&(1<<uint(weekday)) != 0
	if spec.Dom&starBit != 0 || spec.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// firstMinute returns the first minute of the day from minute from on that
// spec's hour and minute fields name.
func firstMinute(spec *cron.SpecSchedule, from int) (int, bool) {
	for h := from / 60; h < 24; h++ {
		if spec.Hour&(1<<uint(h)) == 0 {
			continue
		}
		low := 0
		if h == from/60 {
			low = from % 60
		}
		if m := (spec.Minute &^ starBit) >> uint(low) << uint(low); m != 0 {
			return h*60 + bits.TrailingZeros64(m), true
		}
	}
	return 0, false
}

// lastMinute returns the last minute of the day up to minute to that spec's
// hour and minute fields name.
func lastMinute(spec *cron.SpecSchedule, to int) (int, bool) {
	for h := to / 60; h >= 0; h-- {
		if spec.Hour&(1<<uint(h)) == 0 {
			continue
		}
		high := 59
		if h == to/60 {
			high = to % 60
		}
		if m := spec.Minute & (1<<uint(high+1) - 1); m != 0 {
			return h*60 + 63 - bits.LeadingZeros64(m), true
		}
	}
	return 0, false
}
