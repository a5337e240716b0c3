package schedule

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/robfig/cron/v3"
)

func TestFirstShowing(t *testing.T) {
	tests := []struct {
		name    string
		zone    string
		reading string // the wall clock, written as if UTC
		want    string
	}{
		{"an ordinary reading", "Europe/Berlin", "2026-03-28T02:30:00Z", "2026-03-28T02:30:00+01:00"},
		{"jumped over: the first instant after the jump", "Europe/Berlin", "2026-03-29T02:30:00Z", "2026-03-29T03:00:00+02:00"},
		{"the jump's first reading", "Europe/Berlin", "2026-03-29T03:00:00Z", "2026-03-29T03:00:00+02:00"},
		{"shown twice: the first time", "Europe/Berlin", "2026-10-25T02:30:00Z", "2026-10-25T02:30:00+02:00"},
		{"after the repeated hour", "Europe/Berlin", "2026-10-25T03:00:00Z", "2026-10-25T03:00:00+01:00"},
		{"midnight jumped over", "Africa/Cairo", "2026-04-24T00:00:00Z", "2026-04-24T01:00:00+03:00"},
		{"an hour repeated before midnight", "Africa/Cairo", "2026-10-29T23:00:00Z", "2026-10-29T23:00:00+03:00"},
		{"the midnight after it", "Africa/Cairo", "2026-10-30T00:00:00Z", "2026-10-30T00:00:00+02:00"},
		{"half an hour jumped over", "Australia/Lord_Howe", "2026-10-04T02:15:00Z", "2026-10-04T02:30:00+11:00"},
		{"half an hour repeated", "Australia/Lord_Howe", "2026-04-05T01:45:00Z", "2026-04-05T01:45:00+11:00"},
		{"a skipped day: the next one's start", "Pacific/Apia", "2011-12-30T12:00:00Z", "2011-12-31T00:00:00+14:00"},
		{"UTC", "UTC", "2026-03-29T02:30:00Z", "2026-03-29T02:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstShowing(rfc(t, tt.reading), load(t, tt.zone))
			if diff := cmp.Diff(rfc(t, tt.want), got); diff != "" {
				t.Errorf("firstShowing(%s in %s) (-want +got):\n%s", tt.reading, tt.zone, diff)
			}
		})
	}
}

func TestLatestShown(t *testing.T) {
	tests := []struct {
		name string
		zone string
		at   string
		want string // the wall clock, written as if UTC
	}{
		{"an ordinary instant", "Europe/Berlin", "2026-10-24T02:30:00+02:00", "2026-10-24T02:30:00Z"},
		{"in the repeated hour, the clock had shown later", "Europe/Berlin", "2026-10-25T02:15:00+01:00", "2026-10-25T02:59:59.999999999Z"},
		{"past the repeated hour", "Europe/Berlin", "2026-10-25T03:00:00+01:00", "2026-10-25T03:00:00Z"},
		{"just after a jump", "Europe/Berlin", "2026-03-29T03:00:00+02:00", "2026-03-29T03:00:00Z"},
		{"after midnight went back to 23:00", "Africa/Cairo", "2026-10-29T23:10:00+02:00", "2026-10-29T23:59:59.999999999Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := latestShown(rfc(t, tt.at), load(t, tt.zone))
			if diff := cmp.Diff(rfc(t, tt.want), got); diff != "" {
				t.Errorf("latestShown(%s in %s) (-want +got):\n%s", tt.at, tt.zone, diff)
			}
		})
	}
}

// TestStartsAgainstAWalk checks a recurring window's nextStart and coverEnd
// against the rule done the slow, obvious way: step through the instants a
// minute apart, and call an instant a start when the wall clock first
// shows, there, a reading the cron names (walkStarts). Around both changes
// of several zones, including ones that change at midnight, by half an
// hour, and by two hours, and for crons and durations whose windows fall
// before, across and after the change.
func TestStartsAgainstAWalk(t *testing.T) {
	t.Parallel() // with the sweep of every zone: both take a while
	week := []time.Duration{time.Minute, 61 * time.Minute, 25 * time.Hour, 168 * time.Hour}
	day := []time.Duration{time.Minute, 61 * time.Minute, 25 * time.Hour}
	short := []time.Duration{time.Minute, 61 * time.Minute}
	crons := []struct {
		expr      string
		durations []time.Duration
	}{
		{"30 2 * * *", week},
		{"30 1 * * *", day},
		{"*/20 0-3 * * *", day},
		{"0 0 * * *", week},
		{"30 23 * * *", day},
		{"0 9-17 * * 1-5", week},
		{"0 0 30 2 *", short},
		{"* * * * *", short},
	}
	days := []struct{ zone, day string }{
		{"America/New_York", "2026-03-08"}, {"America/New_York", "2026-11-01"},
		{"Africa/Cairo", "2026-04-24"}, {"Africa/Cairo", "2026-10-29"},
		{"America/Santiago", "2026-04-04"}, {"America/Santiago", "2026-09-06"},
		{"Australia/Lord_Howe", "2026-04-05"}, {"Australia/Lord_Howe", "2026-10-04"},
		{"Antarctica/Troll", "2026-03-29"}, {"Antarctica/Troll", "2026-10-25"},
	}
	for _, d := range days {
		loc := load(t, d.zone)
		changes := rfc(t, d.day+"T00:00:00Z")
		// Ask every 10.5 minutes over two days around the change.
		from, to := changes.Add(-24*time.Hour), changes.Add(24*time.Hour)
		for _, cr := range crons {
			spec, detail := parseCron(cr.expr, loc)
			if detail != "" {
				t.Fatal(detail)
			}
			// Walk from far enough back to see the windows open at from,
			// to far enough ahead to see the next start after to.
			longest := cr.durations[len(cr.durations)-1]
			starts := walkStarts(t, spec, from.Add(-longest-2*time.Hour), to.Add(96*time.Hour))
			for _, dur := range cr.durations {
				w := window{spec: spec, duration: dur}
				for at := from; at.Before(to); at = at.Add(10*time.Minute + 30*time.Second) {
					i := sort.Search(len(starts), func(i int) bool { return starts[i].After(at) })
					want := outcome{}
					if i < len(starts) {
						want.NextStart = starts[i]
					}
					if i > 0 && starts[i-1].Add(dur).After(at) {
						want.End = starts[i-1].Add(dur)
					}
					var got outcome
					if s, ok := w.nextStart(at); ok {
						got.NextStart = s
					}
					if e, ok := w.coverEnd(at); ok {
						got.End = e
					}
					if !got.NextStart.Equal(want.NextStart) || !got.End.Equal(want.End) {
						t.Fatalf("%s %q lasting %s, at %s (-want +got):\n%s", d.zone, cr.expr, dur, at.In(loc), cmp.Diff(want, got))
					}
				}
			}
		}
	}
}

// outcome is what a window says at an instant: its next start, and the end
// of the occurrence open then (zero when none is).
type outcome struct {
	NextStart, End time.Time
}

// walkStarts returns spec's starts in [from, to), found a minute at a time:
// an instant starts a window when its reading passes one or more readings
// spec names that no earlier instant reached. Which readings spec names is
// asked of robfig/cron in UTC, where its Next has no daylight saving to get
// wrong.
func walkStarts(t *testing.T, spec *cron.SpecSchedule, from, to time.Time) []time.Time {
	t.Helper()
	inUTC := *spec
	inUTC.Location = time.UTC
	loc := spec.Location
	var starts []time.Time
	// The walks start far from any change, where the clock has shown
	// nothing later than the minute before.
	high := reading(from.Add(-time.Minute), loc)
	named := inUTC.Next(high) // the first named reading after high
	for at := from; at.Before(to); at = at.Add(time.Minute) {
		r := reading(at, loc)
		if !r.After(high) {
			continue
		}
		high = r
		if !named.IsZero() && !named.After(r) {
			starts = append(starts, at)
			named = inUTC.Next(high)
		}
	}
	return starts
}
