package schedule

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
	want Outlook
}

// checkAt asks c about every instant.
func checkAt(t *testing.T, c *Compiled, tests []instant) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// cmp compares times with time.Time.Equal: the instant, not the zone.
			if diff := cmp.Diff(tt.want, c.At(tt.now)); diff != "" {
				t.Errorf("At(%s) (-want +got):\n%s", tt.now, diff)
			}
		})
	}
}

func open(next time.Time) Outlook   { return Outlook{Open: true, Next: next, Recheck: next} }
func closed(next time.Time) Outlook { return Outlook{Open: false, Next: next, Recheck: next} }

// closedEver is the answer of a schedule with no window ahead.
var closedEver = Outlook{Open: false}

// openBeyond is the answer of a run At stopped following: open at least
// until horizon, asked again a day after now at the latest.
func openBeyond(now, horizon time.Time) Outlook {
	return Outlook{Open: true, Horizon: horizon, Recheck: minTime(horizon, now.Add(MaxRecheck))}
}

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

// TestAtOnDaylightSavingDays asks about windows on the days the clocks
// change, in 2026 and 2027: in zones that change at 02:00 or 03:00, in one
// that changes by 30 minutes, and in the zones that change at midnight,
// whose day robfig/cron's Next steps over. Each case asks the day before
// (when does it next open?) and during the day (is it open?). Times are
// written with the offset in force, so "+03:00" after "+02:00" is summer
// time.
func TestAtOnDaylightSavingDays(t *testing.T) {
	type ask struct {
		now  string
		want Outlook
	}
	tests := []struct {
		name   string
		zone   string
		window Window
		asks   []ask
	}{
		// Africa/Cairo: 2026-04-24 (Friday) 00:00 EET is 01:00 EEST;
		// 2026-10-29 (Thursday) 24:00 EEST is 23:00 EET; in 2027 on
		// 04-30 and 10-28.
		{"Cairo spring 2026: 02:00 on the Friday", "Africa/Cairo", Window{Cron: "0 2 * * 5", Duration: 2 * time.Hour}, []ask{
			{"2026-04-23T12:00:00+02:00", closed(rfc(t, "2026-04-24T02:00:00+03:00"))},
			{"2026-04-24T02:30:00+03:00", open(rfc(t, "2026-04-24T04:00:00+03:00"))},
			{"2026-04-24T04:00:00+03:00", closed(rfc(t, "2026-05-01T02:00:00+03:00"))},
		}},
		{"Cairo spring 2026: midnight does not exist, 01:00 EEST starts", "Africa/Cairo", Window{Cron: "0 0 * * 5", Duration: time.Hour}, []ask{
			{"2026-04-23T12:00:00+02:00", closed(rfc(t, "2026-04-24T01:00:00+03:00"))},
			{"2026-04-24T01:30:00+03:00", open(rfc(t, "2026-04-24T02:00:00+03:00"))},
		}},
		{"Cairo autumn 2026: 23:30 on the Thursday starts once", "Africa/Cairo", Window{Cron: "30 23 * * 4", Duration: time.Hour}, []ask{
			{"2026-10-28T12:00:00+03:00", closed(rfc(t, "2026-10-29T23:30:00+03:00"))},
			{"2026-10-29T23:45:00+03:00", open(rfc(t, "2026-10-29T23:30:00+02:00"))},
			{"2026-10-29T23:45:00+02:00", closed(rfc(t, "2026-11-05T23:30:00+02:00"))},
		}},
		{"Cairo spring 2027", "Africa/Cairo", Window{Cron: "0 2 * * 5", Duration: 2 * time.Hour}, []ask{
			{"2027-04-29T12:00:00+02:00", closed(rfc(t, "2027-04-30T02:00:00+03:00"))},
			{"2027-04-30T03:00:00+03:00", open(rfc(t, "2027-04-30T04:00:00+03:00"))},
		}},
		{"Cairo autumn 2027", "Africa/Cairo", Window{Cron: "30 23 * * 4", Duration: 30 * time.Minute}, []ask{
			{"2027-10-27T12:00:00+03:00", closed(rfc(t, "2027-10-28T23:30:00+03:00"))},
			{"2027-10-28T23:45:00+02:00", closed(rfc(t, "2027-11-04T23:30:00+02:00"))},
		}},

		// Asia/Beirut: 2026-03-29 (Sunday) 00:00 EET is 01:00 EEST;
		// 2026-10-24 (Saturday) 24:00 EEST is 23:00 EET; in 2027 on
		// 03-28 and 10-30.
		{"Beirut spring 2026: 03:00 on the Sunday", "Asia/Beirut", Window{Cron: "0 3 * * 0", Duration: time.Hour}, []ask{
			{"2026-03-28T12:00:00+02:00", closed(rfc(t, "2026-03-29T03:00:00+03:00"))},
			{"2026-03-29T03:30:00+03:00", open(rfc(t, "2026-03-29T04:00:00+03:00"))},
		}},
		{"Beirut spring 2026: midnight does not exist", "Asia/Beirut", Window{Cron: "0 0 * * 0", Duration: 30 * time.Minute}, []ask{
			{"2026-03-28T12:00:00+02:00", closed(rfc(t, "2026-03-29T01:00:00+03:00"))},
			{"2026-03-29T01:10:00+03:00", open(rfc(t, "2026-03-29T01:30:00+03:00"))},
		}},
		{"Beirut autumn 2026: 23:00 on the Saturday starts once", "Asia/Beirut", Window{Cron: "0 23 * * 6", Duration: time.Hour}, []ask{
			{"2026-10-23T12:00:00+03:00", closed(rfc(t, "2026-10-24T23:00:00+03:00"))},
			{"2026-10-24T23:30:00+03:00", open(rfc(t, "2026-10-24T23:00:00+02:00"))},
			{"2026-10-24T23:30:00+02:00", closed(rfc(t, "2026-10-31T23:00:00+02:00"))},
		}},
		{"Beirut spring 2027", "Asia/Beirut", Window{Cron: "0 3 * * 0", Duration: time.Hour}, []ask{
			{"2027-03-27T12:00:00+02:00", closed(rfc(t, "2027-03-28T03:00:00+03:00"))},
			{"2027-03-28T03:30:00+03:00", open(rfc(t, "2027-03-28T04:00:00+03:00"))},
		}},
		{"Beirut autumn 2027", "Asia/Beirut", Window{Cron: "0 23 * * 6", Duration: 30 * time.Minute}, []ask{
			{"2027-10-29T12:00:00+03:00", closed(rfc(t, "2027-10-30T23:00:00+03:00"))},
			{"2027-10-30T23:15:00+02:00", closed(rfc(t, "2027-11-06T23:00:00+02:00"))},
		}},

		// America/Santiago: 2026-04-04 (Saturday) 24:00 -03 is 23:00 -04;
		// 2026-09-06 (Sunday) 00:00 -04 is 01:00 -03; in 2027 on 04-03
		// and 09-05.
		{"Santiago spring 2026: 02:00 on the Sunday", "America/Santiago", Window{Cron: "0 2 * * 0", Duration: time.Hour}, []ask{
			{"2026-09-05T12:00:00-04:00", closed(rfc(t, "2026-09-06T02:00:00-03:00"))},
			{"2026-09-06T02:30:00-03:00", open(rfc(t, "2026-09-06T03:00:00-03:00"))},
		}},
		{"Santiago spring 2026: 00:30 does not exist, 01:00 starts", "America/Santiago", Window{Cron: "30 0 * * 0", Duration: time.Hour}, []ask{
			{"2026-09-05T12:00:00-04:00", closed(rfc(t, "2026-09-06T01:00:00-03:00"))},
			{"2026-09-06T01:30:00-03:00", open(rfc(t, "2026-09-06T02:00:00-03:00"))},
		}},
		{"Santiago autumn 2026: 23:30 on the Saturday starts once", "America/Santiago", Window{Cron: "30 23 * * 6", Duration: time.Hour}, []ask{
			{"2026-04-03T12:00:00-03:00", closed(rfc(t, "2026-04-04T23:30:00-03:00"))},
			{"2026-04-04T23:45:00-03:00", open(rfc(t, "2026-04-04T23:30:00-04:00"))},
			{"2026-04-04T23:45:00-04:00", closed(rfc(t, "2026-04-11T23:30:00-04:00"))},
		}},
		{"Santiago autumn 2026: Sunday midnight comes after the repeated hour", "America/Santiago", Window{Cron: "0 0 * * 0", Duration: time.Hour}, []ask{
			{"2026-04-04T12:00:00-03:00", closed(rfc(t, "2026-04-05T00:00:00-04:00"))},
		}},
		{"Santiago spring 2027", "America/Santiago", Window{Cron: "0 2 * * 0", Duration: time.Hour}, []ask{
			{"2027-09-04T12:00:00-04:00", closed(rfc(t, "2027-09-05T02:00:00-03:00"))},
			{"2027-09-05T02:30:00-03:00", open(rfc(t, "2027-09-05T03:00:00-03:00"))},
		}},
		{"Santiago autumn 2027", "America/Santiago", Window{Cron: "30 23 * * 6", Duration: 30 * time.Minute}, []ask{
			{"2027-04-02T12:00:00-03:00", closed(rfc(t, "2027-04-03T23:30:00-03:00"))},
			{"2027-04-03T23:45:00-04:00", closed(rfc(t, "2027-04-10T23:30:00-04:00"))},
		}},

		// Europe/Berlin: 2026-03-29 02:00 CET is 03:00 CEST; 2026-10-25
		// 03:00 CEST is 02:00 CET; in 2027 on 03-28 and 10-31.
		{"Berlin spring 2026: 02:30 does not exist, 03:00 CEST starts", "Europe/Berlin", Window{Cron: "30 2 * * *", Duration: time.Hour}, []ask{
			{"2026-03-28T12:00:00+01:00", closed(rfc(t, "2026-03-29T03:00:00+02:00"))},
			{"2026-03-29T03:59:00+02:00", open(rfc(t, "2026-03-29T04:00:00+02:00"))},
			{"2026-03-29T04:00:00+02:00", closed(rfc(t, "2026-03-30T02:30:00+02:00"))},
		}},
		{"Berlin spring 2026: two starts in the jump start one window", "Europe/Berlin", Window{Cron: "0,30 2 * * *", Duration: 30 * time.Minute}, []ask{
			{"2026-03-29T01:59:00+01:00", closed(rfc(t, "2026-03-29T03:00:00+02:00"))},
			{"2026-03-29T03:10:00+02:00", open(rfc(t, "2026-03-29T03:30:00+02:00"))},
			{"2026-03-29T03:30:00+02:00", closed(rfc(t, "2026-03-30T02:00:00+02:00"))},
		}},
		{"Berlin autumn 2026: 02:30 starts once, in summer time", "Europe/Berlin", Window{Cron: "30 2 * * *", Duration: 30 * time.Minute}, []ask{
			{"2026-10-24T12:00:00+02:00", closed(rfc(t, "2026-10-25T02:30:00+02:00"))},
			{"2026-10-25T02:45:00+02:00", open(rfc(t, "2026-10-25T03:00:00+02:00"))},
			{"2026-10-25T02:45:00+01:00", closed(rfc(t, "2026-10-26T02:30:00+01:00"))},
		}},
		{"Berlin spring 2027", "Europe/Berlin", Window{Cron: "30 2 * * *", Duration: time.Hour}, []ask{
			{"2027-03-27T12:00:00+01:00", closed(rfc(t, "2027-03-28T03:00:00+02:00"))},
			{"2027-03-28T03:30:00+02:00", open(rfc(t, "2027-03-28T04:00:00+02:00"))},
		}},
		{"Berlin autumn 2027", "Europe/Berlin", Window{Cron: "30 2 * * *", Duration: 30 * time.Minute}, []ask{
			{"2027-10-30T12:00:00+02:00", closed(rfc(t, "2027-10-31T02:30:00+02:00"))},
			{"2027-10-31T02:45:00+01:00", closed(rfc(t, "2027-11-01T02:30:00+01:00"))},
		}},

		// America/New_York: 2026-03-08 02:00 EST is 03:00 EDT; 2026-11-01
		// 02:00 EDT is 01:00 EST; in 2027 on 03-14 and 11-07.
		{"New York spring 2026: 02:30 does not exist, 03:00 EDT starts", "America/New_York", Window{Cron: "30 2 * * *", Duration: time.Hour}, []ask{
			{"2026-03-07T12:00:00-05:00", closed(rfc(t, "2026-03-08T03:00:00-04:00"))},
			{"2026-03-08T03:15:00-04:00", open(rfc(t, "2026-03-08T04:00:00-04:00"))},
			{"2026-03-09T03:00:00-04:00", open(rfc(t, "2026-03-09T03:30:00-04:00"))},
		}},
		{"New York spring 2026: 2h from 01:00 EST ends at 04:00 EDT", "America/New_York", Window{Cron: "0 1 * * *", Duration: 2 * time.Hour}, []ask{
			{"2026-03-08T01:00:00-05:00", open(rfc(t, "2026-03-08T04:00:00-04:00"))},
			{"2026-03-08T03:59:00-04:00", open(rfc(t, "2026-03-08T04:00:00-04:00"))},
			{"2026-03-08T04:00:00-04:00", closed(rfc(t, "2026-03-09T01:00:00-04:00"))},
		}},
		{"New York autumn 2026: 01:30 starts once, in summer time", "America/New_York", Window{Cron: "30 1 * * *", Duration: 30 * time.Minute}, []ask{
			{"2026-10-31T12:00:00-04:00", closed(rfc(t, "2026-11-01T01:30:00-04:00"))},
			{"2026-11-01T01:45:00-04:00", open(rfc(t, "2026-11-01T02:00:00-04:00"))},
			{"2026-11-01T01:00:00-05:00", closed(rfc(t, "2026-11-02T01:30:00-05:00"))},
			{"2026-11-01T01:45:00-05:00", closed(rfc(t, "2026-11-02T01:30:00-05:00"))},
		}},
		{"New York autumn 2026: 3h from midnight EDT ends at 02:00 EST", "America/New_York", Window{Cron: "0 0 * * *", Duration: 3 * time.Hour}, []ask{
			{"2026-11-01T00:30:00-04:00", open(rfc(t, "2026-11-01T02:00:00-05:00"))},
			{"2026-11-01T01:59:00-05:00", open(rfc(t, "2026-11-01T02:00:00-05:00"))},
			{"2026-11-01T02:00:00-05:00", closed(rfc(t, "2026-11-02T00:00:00-05:00"))},
		}},
		{"New York spring 2027", "America/New_York", Window{Cron: "30 2 * * *", Duration: time.Hour}, []ask{
			{"2027-03-13T12:00:00-05:00", closed(rfc(t, "2027-03-14T03:00:00-04:00"))},
			{"2027-03-14T03:15:00-04:00", open(rfc(t, "2027-03-14T04:00:00-04:00"))},
		}},
		{"New York autumn 2027", "America/New_York", Window{Cron: "30 1 * * *", Duration: 30 * time.Minute}, []ask{
			{"2027-11-06T12:00:00-04:00", closed(rfc(t, "2027-11-07T01:30:00-04:00"))},
			{"2027-11-07T01:45:00-05:00", closed(rfc(t, "2027-11-08T01:30:00-05:00"))},
		}},

		// Australia/Lord_Howe changes by 30 minutes: 2026-04-05 02:00
		// +11:00 is 01:30 +10:30; 2026-10-04 02:00 +10:30 is 02:30 +11:00;
		// in 2027 on 04-04 and 10-03.
		{"Lord Howe autumn 2026: 01:45 starts once", "Australia/Lord_Howe", Window{Cron: "45 1 * * *", Duration: 30 * time.Minute}, []ask{
			{"2026-04-04T12:00:00+11:00", closed(rfc(t, "2026-04-05T01:45:00+11:00"))},
			{"2026-04-05T01:55:00+11:00", open(rfc(t, "2026-04-05T02:15:00+11:00"))},
			{"2026-04-05T01:50:00+10:30", closed(rfc(t, "2026-04-06T01:45:00+10:30"))},
		}},
		{"Lord Howe spring 2026: 02:15 does not exist, 02:30 starts", "Australia/Lord_Howe", Window{Cron: "15 2 * * *", Duration: time.Hour}, []ask{
			{"2026-10-03T12:00:00+10:30", closed(rfc(t, "2026-10-04T02:30:00+11:00"))},
			{"2026-10-04T03:00:00+11:00", open(rfc(t, "2026-10-04T03:30:00+11:00"))},
		}},
		{"Lord Howe autumn 2027", "Australia/Lord_Howe", Window{Cron: "45 1 * * *", Duration: 30 * time.Minute}, []ask{
			{"2027-04-03T12:00:00+11:00", closed(rfc(t, "2027-04-04T01:45:00+11:00"))},
			{"2027-04-04T01:50:00+10:30", closed(rfc(t, "2027-04-05T01:45:00+10:30"))},
		}},
		{"Lord Howe spring 2027", "Australia/Lord_Howe", Window{Cron: "15 2 * * *", Duration: time.Hour}, []ask{
			{"2027-10-02T12:00:00+10:30", closed(rfc(t, "2027-10-03T02:30:00+11:00"))},
			{"2027-10-03T03:00:00+11:00", open(rfc(t, "2027-10-03T03:30:00+11:00"))},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCompile(t, Schedule{TimeZone: tt.zone, Windows: []Window{tt.window}})
			for _, a := range tt.asks {
				now := rfc(t, a.now)
				if diff := cmp.Diff(a.want, c.At(now)); diff != "" {
					t.Errorf("%q in %s, asked at %s (-want +got):\n%s", tt.window.Cron, tt.zone, a.now, diff)
				}
			}
		})
	}
}

func TestAtNeverAndForever(t *testing.T) {
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	monday := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    Schedule
		now  time.Time
		want Outlook
	}{
		{"30 February never comes", Schedule{Windows: []Window{{Cron: "0 0 30 2 *", Duration: time.Hour}}}, jan1, closedEver},
		{"a one-off after a cron that never fires", Schedule{Windows: []Window{
			{Cron: "0 0 30 2 *", Duration: time.Hour},
			{Start: jan1.AddDate(3, 0, 0), End: jan1.AddDate(3, 0, 1)},
		}}, jan1, closed(jan1.AddDate(3, 0, 0))},
		{"a yearly cron is found a year ahead", Schedule{Windows: []Window{{Cron: "0 0 1 1 *", Duration: time.Hour}}}, jan1.Add(time.Hour), closed(jan1.AddDate(1, 0, 0))},
		{"29 February is found across 2100, eight years ahead", Schedule{Windows: []Window{{Cron: "0 0 29 2 *", Duration: time.Hour}}},
			time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC), closed(time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC))},
		{"every minute of the working week is followed to its end", Schedule{Windows: []Window{{Cron: "* * * * 1-5", Duration: time.Minute}}},
			monday, open(monday.AddDate(0, 0, 5))},
		{"a one-off longer than the look-ahead is followed to its end", Schedule{Windows: []Window{{Start: jan1, End: jan1.AddDate(3, 0, 0)}}},
			jan1.AddDate(0, 1, 0), open(jan1.AddDate(3, 0, 0))},
		{"@daily is midnight", Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "@daily", Duration: time.Hour}}},
			time.Date(2026, 1, 4, 15, 30, 0, 0, time.UTC), open(time.Date(2026, 1, 4, 16, 0, 0, 0, time.UTC))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mustCompile(t, tt.s).At(tt.now)); diff != "" {
				t.Errorf("At(%s) (-want +got):\n%s", tt.now, diff)
			}
		})
	}
}

// TestAtBeyondTheHorizon: a run At does not follow to its end is reported
// with how far it looked, and a time to ask again no more than a day ahead,
// so that the state is looked at again before the run ends.
func TestAtBeyondTheHorizon(t *testing.T) {
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dec1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	minutes := func(n int) time.Duration { return time.Duration(n) * time.Minute }
	// Each hop of a run of 1m windows is a minute: maxSteps hops from
	// the first window's end reach maxSteps+2 minutes past now.
	hopped := minutes(maxSteps + 2)
	// A run is followed from window to window while it is open less than
	// a year ahead: the second window here starts past that.
	chained := Schedule{Windows: []Window{
		{Start: jan1, End: jan1.AddDate(0, 0, 400)},
		{Start: jan1.AddDate(0, 0, 400), End: jan1.AddDate(0, 0, 500)},
	}}
	tests := []struct {
		name string
		s    Schedule
		now  time.Time
		want Outlook
	}{
		{"every minute of December, asked on the 1st", Schedule{Windows: []Window{{Cron: "* * * 12 *", Duration: time.Minute}}},
			dec1, openBeyond(dec1, dec1.Add(hopped))},
		{"every minute of December, asked when its end is within reach", Schedule{Windows: []Window{{Cron: "* * * 12 *", Duration: time.Minute}}},
			dec1.AddDate(0, 0, 25), open(dec1.AddDate(0, 1, 0))},
		{"two one-off windows chained past a year", chained, jan1, openBeyond(jan1, jan1.AddDate(0, 0, 500))},
		{"the chained windows, once they meet within a year", chained, jan1.AddDate(0, 0, 100), open(jan1.AddDate(0, 0, 500))},
		{"the chained windows, after their end", chained, jan1.AddDate(0, 0, 500), closedEver},
		{"a day long, every day: always open", Schedule{Windows: []Window{{Cron: "0 0 * * *", Duration: 24 * time.Hour}}},
			jan1, openBeyond(jan1, jan1.AddDate(0, 0, 368))},
		{"a week long, every day: always open", Schedule{Windows: []Window{{Cron: "0 0 * * *", Duration: 168 * time.Hour}}},
			jan1, openBeyond(jan1, jan1.AddDate(0, 0, 378))},
		{"a week long, every minute: always open", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: 168 * time.Hour}}},
			jan1, openBeyond(jan1, jan1.AddDate(0, 0, 378))},
		{"a minute long, every minute: always open", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}},
			jan1, openBeyond(jan1, jan1.Add(hopped))},
		{"a run of more than 10080 hops is not followed further", Schedule{Windows: []Window{{Cron: "* * 1-10 * *", Duration: time.Minute}}},
			jan1, openBeyond(jan1, jan1.Add(hopped))},
		{"an hour before the horizon, asked again at the horizon", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}},
			jan1.Add(hopped - minutes(60)), openBeyond(jan1.Add(hopped-minutes(60)), jan1.Add(hopped-minutes(60)+hopped))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCompile(t, tt.s).At(tt.now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("At(%s) (-want +got):\n%s", tt.now, diff)
			}
			if got.Open && got.Next.IsZero() && (!got.Recheck.After(tt.now) || got.Recheck.Sub(tt.now) > MaxRecheck) {
				t.Errorf("At(%s): no boundary known, asked again at %s: not within %s", tt.now, got.Recheck, MaxRecheck)
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
			next := c.At(tt.now).Next
			if diff := cmp.Diff("America/New_York", next.Location().String()); next.IsZero() || diff != "" {
				t.Errorf("At(%s).Next = %s (-want +got):\n%s", tt.now, next, diff)
			}
		})
	}
}

// TestAtConcurrent lets the race detector see At shared between goroutines.
func TestAtConcurrent(t *testing.T) {
	c := mustCompile(t, Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{{Cron: "0 2 * * 0", Duration: 2 * time.Hour}}})
	now := time.Date(2026, 1, 3, 17, 30, 0, 0, time.UTC)
	want := open(time.Date(2026, 1, 3, 19, 0, 0, 0, time.UTC))
	results := make(chan Outlook)
	for range 8 {
		go func() { results <- c.At(now) }()
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
		{"weekly in Berlin, closed", Schedule{TimeZone: "Europe/Berlin", Windows: []Window{{Cron: "0 2 * * 0", Duration: 2 * time.Hour}}}},
		{"every minute for 168h", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: 168 * time.Hour}}}},
		{"every minute for 1m", Schedule{Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}}},
		{"every minute for 1m in Berlin", Schedule{TimeZone: "Europe/Berlin", Windows: []Window{{Cron: "* * * * *", Duration: time.Minute}}}},
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
