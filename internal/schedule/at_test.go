package schedule

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// result is what At returns, as one value to diff.
type result struct {
	Open bool
	Next time.Time
	OK   bool
}

func load(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustCompile(t *testing.T, s Schedule) *Compiled {
	t.Helper()
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// instant is one question to At and the answer expected.
type instant struct {
	name string
	now  time.Time
	want result
}

// checkAt asks c about every instant.
func checkAt(t *testing.T, c *Compiled, tests []instant) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got result
			got.Open, got.Next, got.OK = c.At(tt.now)
			// cmp compares times with time.Time.Equal: the instant, not the zone.
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("At(%s) (-want +got):\n%s", tt.now, diff)
			}
		})
	}
}

func open(next time.Time) result   { return result{Open: true, Next: next, OK: true} }
func closed(next time.Time) result { return result{Open: false, Next: next, OK: true} }

var (
	openForever = result{Open: true}
	closedEver  = result{Open: false}
)

func TestAtWeeklyInTokyo(t *testing.T) {
	tokyo := load(t, "Asia/Tokyo")
	jst := func(d, h, m, s, ns int) time.Time { return time.Date(2026, 1, d, h, m, s, ns, tokyo) }
	c := mustCompile(t, Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "0 2 * * 0", Duration: 2 * time.Hour}}})
	checkAt(t, c, []instant{
		{"saturday noon", jst(3, 12, 0, 0, 0), closed(jst(4, 2, 0, 0, 0))},
		{"just before the start", jst(4, 1, 59, 59, 999999999), closed(jst(4, 2, 0, 0, 0))},
		{"at the start: open", jst(4, 2, 0, 0, 0), open(jst(4, 4, 0, 0, 0))},
		{"inside", jst(4, 3, 0, 0, 0), open(jst(4, 4, 0, 0, 0))},
		{"just before the end", jst(4, 3, 59, 59, 999999999), open(jst(4, 4, 0, 0, 0))},
		{"at the end: closed", jst(4, 4, 0, 0, 0), closed(jst(11, 2, 0, 0, 0))},
		{"asked in UTC, inside by Tokyo's clock", time.Date(2026, 1, 3, 17, 30, 0, 0, time.UTC), open(jst(4, 4, 0, 0, 0))},
		{"02:30 on Sunday by UTC's clock is not by Tokyo's", time.Date(2026, 1, 4, 2, 30, 0, 0, time.UTC), closed(jst(11, 2, 0, 0, 0))},
	})
}

func TestAtAcrossMidnight(t *testing.T) {
	utc := func(d, h, m int) time.Time { return time.Date(2026, 5, d, h, m, 0, 0, time.UTC) }
	c := mustCompile(t, Schedule{Windows: []Window{{Cron: "0 23 * * *", Duration: 2 * time.Hour}}})
	checkAt(t, c, []instant{
		{"before", utc(1, 22, 59), closed(utc(1, 23, 0))},
		{"before midnight", utc(1, 23, 30), open(utc(2, 1, 0))},
		{"after midnight, started yesterday", utc(2, 0, 30), open(utc(2, 1, 0))},
		{"at the end", utc(2, 1, 0), closed(utc(2, 23, 0))},
	})
}

func TestAtMergesOverlappingAndTouchingWindows(t *testing.T) {
	utc := func(d, h, m int) time.Time { return time.Date(2026, 5, d, h, m, 0, 0, time.UTC) }
	t.Run("crons", func(t *testing.T) {
		// 01:00-03:00 overlaps 02:00-04:00, which touches 04:00-05:00.
		c := mustCompile(t, Schedule{Windows: []Window{
			{Cron: "0 1 * * *", Duration: 2 * time.Hour},
			{Cron: "0 2 * * *", Duration: 2 * time.Hour},
			{Cron: "0 4 * * *", Duration: time.Hour},
		}})
		checkAt(t, c, []instant{
			{"before the run", utc(1, 0, 59), closed(utc(1, 1, 0))},
			{"in the first window", utc(1, 1, 30), open(utc(1, 5, 0))},
			{"in the overlap", utc(1, 2, 30), open(utc(1, 5, 0))},
			{"where two touch", utc(1, 4, 0), open(utc(1, 5, 0))},
			{"at the end of the run", utc(1, 5, 0), closed(utc(2, 1, 0))},
		})
	})
	t.Run("one cron overlapping itself", func(t *testing.T) {
		// Starts at 09:00, 10:00 and 11:00, each lasting 90 minutes.
		c := mustCompile(t, Schedule{Windows: []Window{{Cron: "0 9-11 * * *", Duration: 90 * time.Minute}}})
		checkAt(t, c, []instant{
			{"first", utc(1, 9, 10), open(utc(1, 12, 30))},
			{"in two at once", utc(1, 11, 15), open(utc(1, 12, 30))},
			{"end", utc(1, 12, 30), closed(utc(2, 9, 0))},
		})
	})
	t.Run("one-off windows touching a cron on both sides", func(t *testing.T) {
		c := mustCompile(t, Schedule{Windows: []Window{
			{Start: utc(1, 9, 0), End: utc(1, 10, 0)},
			{Cron: "0 10 * * *", Duration: time.Hour},
			{Start: utc(1, 11, 0), End: utc(1, 12, 0)},
		}})
		checkAt(t, c, []instant{
			{"before", utc(1, 8, 0), closed(utc(1, 9, 0))},
			{"first one-off", utc(1, 9, 30), open(utc(1, 12, 0))},
			{"the cron", utc(1, 10, 30), open(utc(1, 12, 0))},
			{"last one-off", utc(1, 11, 0), open(utc(1, 12, 0))},
			{"end", utc(1, 12, 0), closed(utc(2, 10, 0))},
			{"next day, the cron alone", utc(2, 10, 30), open(utc(2, 11, 0))},
		})
	})
	t.Run("a gap of one second is a transition", func(t *testing.T) {
		c := mustCompile(t, Schedule{Windows: []Window{
			{Start: utc(1, 9, 0), End: utc(1, 10, 0).Add(-time.Second)},
			{Cron: "0 10 * * *", Duration: time.Hour},
		}})
		checkAt(t, c, []instant{
			{"first", utc(1, 9, 30), open(utc(1, 10, 0).Add(-time.Second))},
			{"in the gap", utc(1, 10, 0).Add(-time.Second), closed(utc(1, 10, 0))},
		})
	})
}

func TestAtOneOffWindows(t *testing.T) {
	// The schedule's zone is for crons; one-off windows keep their own offset.
	c := mustCompile(t, Schedule{TimeZone: "America/New_York", Windows: []Window{
		{Start: rfc(t, "2026-01-01T00:00:00Z"), End: rfc(t, "2026-01-02T00:00:00Z")},
		{Start: rfc(t, "2026-12-24T00:00:00+09:00"), End: rfc(t, "2026-12-26T00:00:00+09:00")},
	}})
	checkAt(t, c, []instant{
		{"inside the first", rfc(t, "2026-01-01T12:00:00Z"), open(rfc(t, "2026-01-02T00:00:00Z"))},
		{"between, the second in the future", rfc(t, "2026-06-01T00:00:00Z"), closed(rfc(t, "2026-12-23T15:00:00Z"))},
		{"just before +09:00 midnight", rfc(t, "2026-12-23T14:59:59Z"), closed(rfc(t, "2026-12-24T00:00:00+09:00"))},
		{"at +09:00 midnight", rfc(t, "2026-12-23T10:00:00-05:00"), open(rfc(t, "2026-12-25T15:00:00Z"))},
		{"at the end of the last: none ahead", rfc(t, "2026-12-26T00:00:00+09:00"), closedEver},
		{"long after", rfc(t, "2030-01-01T00:00:00Z"), closedEver},
	})
}

func TestAtDaylightSavingInNewYork(t *testing.T) {
	ny := load(t, "America/New_York")
	at := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, ny) }
	utc := func(mo time.Month, d, h, m int) time.Time { return time.Date(2026, mo, d, h, m, 0, 0, time.UTC) }
	nyc := func(ws ...Window) *Compiled {
		return mustCompile(t, Schedule{TimeZone: "America/New_York", Windows: ws})
	}

	t.Run("spring forward: 02:30 does not exist on March 8, so it is skipped", func(t *testing.T) {
		c := nyc(Window{Cron: "30 2 * * *", Duration: time.Hour})
		checkAt(t, c, []instant{
			{"the day before", at(3, 7, 2, 45), open(at(3, 7, 3, 30))},
			{"before the change", at(3, 8, 0, 0), closed(at(3, 9, 2, 30))},
			{"after the change", at(3, 8, 3, 15), closed(at(3, 9, 2, 30))},
			{"the day after", at(3, 9, 3, 0), open(at(3, 9, 3, 30))},
		})
	})
	t.Run("spring forward: 2h from 01:00 EST ends at 04:00 EDT", func(t *testing.T) {
		c := nyc(Window{Cron: "0 1 * * *", Duration: 2 * time.Hour})
		checkAt(t, c, []instant{
			{"start", utc(3, 8, 6, 0), open(utc(3, 8, 8, 0))},
			{"after the change", at(3, 8, 3, 59), open(at(3, 8, 4, 0))},
			{"end", at(3, 8, 4, 0), closed(at(3, 9, 1, 0))},
		})
	})
	t.Run("fall back: 01:30 happens twice on November 1, so the window does", func(t *testing.T) {
		// 01:30 EDT is 05:30Z, 01:30 EST is 06:30Z.
		c := nyc(Window{Cron: "30 1 * * *", Duration: 30 * time.Minute})
		checkAt(t, c, []instant{
			{"before", utc(11, 1, 5, 0), closed(utc(11, 1, 5, 30))},
			{"first 01:30", utc(11, 1, 5, 45), open(utc(11, 1, 6, 0))},
			{"between: 01:00 EST", utc(11, 1, 6, 0), closed(utc(11, 1, 6, 30))},
			{"second 01:30", utc(11, 1, 6, 45), open(utc(11, 1, 7, 0))},
			{"after", utc(11, 1, 7, 0), closed(at(11, 2, 1, 30))},
		})
	})
	t.Run("fall back: the two 01:30 windows of an hour touch and merge", func(t *testing.T) {
		c := nyc(Window{Cron: "30 1 * * *", Duration: time.Hour})
		checkAt(t, c, []instant{
			{"first", utc(11, 1, 5, 45), open(utc(11, 1, 7, 30))},
			{"where they touch", utc(11, 1, 6, 30), open(utc(11, 1, 7, 30))},
		})
	})
	t.Run("fall back: 3h from midnight EDT ends at 02:00 EST, 2h later by the clock", func(t *testing.T) {
		c := nyc(Window{Cron: "0 0 * * *", Duration: 3 * time.Hour})
		checkAt(t, c, []instant{
			{"start", at(11, 1, 0, 30), open(at(11, 1, 2, 0))},
			{"01:59 EST", utc(11, 1, 6, 59), open(utc(11, 1, 7, 0))},
			{"02:00 EST", at(11, 1, 2, 0), closed(at(11, 2, 0, 0))},
		})
	})
}

func TestAtNeverAndForever(t *testing.T) {
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	monday := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Schedule
		now  time.Time
		want result
	}{
		{"30 February never comes", Schedule{Windows: []Window{{Cron: "0 0 30 2 *", Duration: time.Hour}}}, jan1, closedEver},
		{"a one-off after a cron that never fires", Schedule{Windows: []Window{
			{Cron: "0 0 30 2 *", Duration: time.Hour},
			{Start: jan1.AddDate(3, 0, 0), End: jan1.AddDate(3, 0, 1)},
		}}, jan1, closed(jan1.AddDate(3, 0, 0))},
		{"a yearly cron is found a year ahead", Schedule{Windows: []Window{{Cron: "0 0 1 1 *", Duration: time.Hour}}}, jan1.Add(time.Hour), closed(jan1.AddDate(1, 0, 0))},
		{"a day long, every day: always open", Schedule{Windows: []Window{{Cron: "0 0 * * *", Duration: 24 * time.Hour}}}, jan1, openForever},
		{"a week long, every day: always open", Schedule{Windows: []Window{{Cron: "0 0 * * *", Duration: 168 * time.Hour}}}, jan1, openForever},
		{"a week long, every minute: always open", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: 168 * time.Hour}}}, jan1, openForever},
		{"a minute long, every minute: always open", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}}, jan1, openForever},
		{"every minute of the working week is followed to its end", Schedule{Windows: []Window{{Cron: "* * * * 1-5", Duration: time.Minute}}},
			monday, open(monday.AddDate(0, 0, 5))},
		{"a one-off longer than the look-ahead is followed to its end", Schedule{Windows: []Window{{Start: jan1, End: jan1.AddDate(3, 0, 0)}}},
			jan1.AddDate(0, 1, 0), open(jan1.AddDate(3, 0, 0))},
		{"a run still open a year ahead is not followed further", Schedule{Windows: []Window{
			{Start: jan1, End: jan1.AddDate(0, 0, 200)},
			{Start: jan1.AddDate(0, 0, 200), End: jan1.AddDate(0, 0, 400)},
			{Start: jan1.AddDate(0, 0, 400), End: jan1.AddDate(0, 0, 500)},
		}}, jan1, openForever},
		{"a run of more than 10080 hops is not followed further", Schedule{Windows: []Window{{Cron: "* * 1-10 * *", Duration: time.Minute}}},
			jan1, openForever},
		{"@daily is midnight", Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "@daily", Duration: time.Hour}}},
			time.Date(2026, 1, 4, 15, 30, 0, 0, time.UTC), open(time.Date(2026, 1, 4, 16, 0, 0, 0, time.UTC))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got result
			got.Open, got.Next, got.OK = mustCompile(t, tt.s).At(tt.now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("At(%s) (-want +got):\n%s", tt.now, diff)
			}
		})
	}
}

// TestAtNextInNowsLocation: callers print next; it should read in the zone
// they asked in, whatever zone the window was written in.
func TestAtNextInNowsLocation(t *testing.T) {
	tokyo := load(t, "Asia/Tokyo")
	ny := load(t, "America/New_York")
	c := mustCompile(t, Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{
		{Cron: "0 2 * * 0", Duration: 2 * time.Hour},
		{Start: time.Date(2026, 2, 1, 0, 0, 0, 0, tokyo), End: time.Date(2026, 2, 2, 0, 0, 0, 0, tokyo)},
	}})
	tests := []struct {
		name string
		now  time.Time
	}{
		{"cron start", time.Date(2026, 1, 3, 0, 0, 0, 0, ny)},
		{"cron end", time.Date(2026, 1, 4, 3, 0, 0, 0, tokyo).In(ny)},
		{"one-off start", time.Date(2026, 1, 31, 0, 0, 0, 0, ny)},
		{"one-off end", time.Date(2026, 2, 1, 12, 0, 0, 0, ny)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, next, ok := c.At(tt.now)
			if diff := cmp.Diff("America/New_York", next.Location().String()); !ok || diff != "" {
				t.Errorf("At(%s) = %s, %t (-want +got):\n%s", tt.now, next, ok, diff)
			}
		})
	}
}

// TestLatestFire checks latestFire against walking every fire with robfig's
// own Next: around both daylight-saving changes, where fires are irregular,
// and in Liberia before 1972, whose offset of -0:44:30 puts second 0 of its
// minutes at second 30 of UTC's.
func TestLatestFire(t *testing.T) {
	ny := load(t, "America/New_York")
	monrovia := load(t, "Africa/Monrovia")
	long := []time.Duration{time.Minute, 61 * time.Minute, 25 * time.Hour, 168 * time.Hour}
	short := []time.Duration{time.Minute, 61 * time.Minute}
	crons := []struct {
		expr      string
		durations []time.Duration
	}{
		{"30 2 * * *", long},
		{"30 1 * * *", long},
		{"*/20 1 * * *", long},
		{"0 0 * * *", long},
		{"0 9-17 * * 1-5", long},
		{"0 0 30 2 *", long},
		{"* * * * *", short}, // walking a week of minutes for every instant would be slow
	}
	days := []time.Time{
		time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
		time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
		time.Date(1971, 6, 1, 0, 0, 0, 0, monrovia),
	}
	for _, day := range days {
		for _, cr := range crons {
			spec, detail := parseCron(cr.expr, day.Location())
			if detail != "" {
				t.Fatal(detail)
			}
			for _, d := range cr.durations {
				for by := day; by.Before(day.Add(48 * time.Hour)); by = by.Add(37*time.Minute + 500*time.Millisecond) {
					want, wantOK := walkLatest(spec, by.Add(-d), by)
					got, gotOK := latestFire(spec, by.Add(-d), by)
					if got.Equal(want) && gotOK == wantOK {
						continue // cmp.Diff is slow enough to matter in this loop
					}
					if diff := cmp.Diff(result{Next: want, OK: wantOK}, result{Next: got, OK: gotOK}); diff != "" {
						t.Fatalf("%s %q, %s: latestFire(%s, %s) (-want +got):\n%s", day.Location(), cr.expr, d, by.Add(-d), by, diff)
					}
				}
			}
		}
	}
}

// walkLatest is latestFire done the slow, obvious way.
func walkLatest(spec interface{ Next(time.Time) time.Time }, after, by time.Time) (time.Time, bool) {
	var last time.Time
	for next := spec.Next(after); !next.IsZero() && !next.After(by); next = spec.Next(next) {
		last = next
	}
	return last, !last.IsZero()
}

// TestAtConcurrent lets the race detector see At shared between goroutines.
func TestAtConcurrent(t *testing.T) {
	c := mustCompile(t, Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "0 2 * * 0", Duration: 2 * time.Hour}}})
	now := time.Date(2026, 1, 3, 17, 30, 0, 0, time.UTC)
	want := open(time.Date(2026, 1, 3, 19, 0, 0, 0, time.UTC))
	results := make(chan result)
	for range 8 {
		go func() {
			var r result
			r.Open, r.Next, r.OK = c.At(now)
			results <- r
		}()
	}
	for range 8 {
		if diff := cmp.Diff(want, <-results); diff != "" {
			t.Errorf("At (-want +got):\n%s", diff)
		}
	}
}

// BenchmarkAt measures the per-reconcile cost: a typical schedule, and the
// worst cases the search bounds are for.
func BenchmarkAt(b *testing.B) {
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	benchmarks := []struct {
		name string
		s    Schedule
	}{
		{"weekly, closed", Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "0 2 * * 0", Duration: 2 * time.Hour}}}},
		{"every minute for 168h", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: 168 * time.Hour}}}},
		{"every minute for 1m", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}}},
		{"daily for 24h", Schedule{Windows: []Window{{Cron: "0 0 * * *", Duration: 24 * time.Hour}}}},
		{"30 February", Schedule{Windows: []Window{{Cron: "0 0 30 2 *", Duration: time.Hour}}}},
	}
	for _, bm := range benchmarks {
		c, err := Compile(bm.s)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				c.At(now)
			}
		})
	}
}
