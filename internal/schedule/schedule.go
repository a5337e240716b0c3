// Package schedule decides whether a DynamicIngressState's maintenance
// windows (spec.schedule) are open at a given instant, and when that next
// changes. It reads no clock: the caller passes the time in, so the answer
// for an instant is always the same. Only FromSpec knows the API type.
//
// A schedule is a list of windows; the state is open while any window is.
// Every window is the half-open interval [start, end): open at its start,
// closed again at its end, so a window that ends at the instant another one
// starts makes one unbroken run with no transition between them.
//
// A recurring window starts at each time its cron expression names, read on
// the wall clock of the schedule's time zone, and lasts Duration of real
// elapsed time. Cron expressions are parsed by github.com/robfig/cron/v3, the
// parser the Kubernetes CronJob controller uses, so they name the same days
// and times here as there. Turning those wall-clock times into instants is
// this package's own (wallclock.go), so that daylight-saving days never lose
// a window (docs/behaviour.md):
//   - a start whose wall-clock time does not exist on a spring-forward day
//     (02:30 in America/New_York on 2026-03-08) starts at the first instant
//     after the jump (03:00 EDT);
//   - a start inside the repeated hour of a fall-back day (01:30 in
//     America/New_York on 2026-11-01) starts once, at its first occurrence
//     (01:30 EDT);
//   - a day whose midnight does not exist (Africa/Cairo, Asia/Beirut,
//     America/Santiago) keeps all its windows.
//
// A one-off window is fixed by its own RFC 3339 start and end, offset
// included; the schedule's time zone does not apply to it.
package schedule

import (
	"fmt"
	"time"
)

// Limits on a schedule, also stated in the CRD so the API server rejects what
// Validate would.
const (
	// MaxWindows bounds the per-reconcile work, which grows with the number
	// of windows.
	MaxWindows = 32
	// MinDuration is the shortest recurring window: cron has minute
	// resolution, so anything shorter could never be observed reliably.
	MinDuration = time.Minute
	// MaxDuration is the longest recurring window, one week; a longer one
	// is better written as a one-off window or a coarser cron.
	MaxDuration = 168 * time.Hour
)

// Window is one maintenance window: recurring when Cron is set, one-off when
// Start and End are.
type Window struct {
	// Cron names each start of a recurring window: five fields (minute,
	// hour, day of month, month, day of week) or one of the descriptors
	// @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly.
	// @every is rejected: it counts from whenever the process started, not
	// from the clock. A TZ= or CRON_TZ= prefix is rejected: the time zone
	// belongs in Schedule.TimeZone, as it does in a CronJob.
	Cron string
	// Duration is how long each recurring window lasts, in real elapsed
	// time (a window over a daylight-saving change covers a different span
	// of wall-clock time). Between MinDuration and MaxDuration.
	Duration time.Duration
	// Start and End bound a one-off window; End must be after Start.
	Start, End time.Time
}

// Schedule is a set of maintenance windows.
type Schedule struct {
	// TimeZone is the IANA name (such as Asia/Tokyo) of the zone whose wall
	// clock the cron expressions are read on. Empty means UTC.
	TimeZone string
	// Windows are the windows; the state is open inside any of them.
	Windows []Window
}

// FieldError is one reason a schedule is invalid.
type FieldError struct {
	// Field is the path relative to spec.schedule, such as
	// "windows[0].cron" or "timeZone", so callers can prefix it with
	// wherever the schedule sits in their object.
	Field string
	// Value is the offending value as written, empty when it is missing.
	Value string
	// Detail says what is wrong, in words meant for the user.
	Detail string
}

// Error lets a FieldError stand alone as an error, as Compile returns it.
func (e FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %s", e.Field, e.Detail)
	}
	return fmt.Sprintf("%s: %q: %s", e.Field, e.Value, e.Detail)
}

// Validate returns every reason s is invalid, one per offending field, or
// nil when it is valid. Compile accepts exactly what Validate accepts.
func Validate(s Schedule) []FieldError {
	_, errs := compile(s)
	return errs
}
