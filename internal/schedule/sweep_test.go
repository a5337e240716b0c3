package schedule

import (
	"archive/zip"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryDayInEveryZone sweeps every zone in Go's tzdata through the
// years 2026 to 2030 with a window every day at each of several times
// around the hours when clocks change, and finds that every day has exactly
// one start, at its time or, when the clocks jumped over that, at the first
// instant after the jump; and that a start whose time the clocks show twice
// is the first. Zones that behave alike in these years are swept once: of
// about 600 names, fewer than 70 behave differently.
func TestEveryDayInEveryZone(t *testing.T) {
	t.Parallel()
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	days := int(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC).Sub(first) / (24 * time.Hour))
	times := []time.Duration{0, 30 * time.Minute, time.Hour, 2 * time.Hour, 150 * time.Minute, 3 * time.Hour}
	zones := goZones(t)
	t.Logf("%d zones, %d distinct files, %d ways to behave in these years; %d days, %d times a day",
		zones.names, zones.files, len(zones.alike), days, len(times))
	for _, loc := range zones.alike {
		t.Run(loc.String(), func(t *testing.T) {
			t.Parallel()
			for _, at := range times {
				cronExpr := fmt.Sprintf("%d %d * * *", at/time.Minute%60, at/time.Hour)
				spec, detail := parseCron(cronExpr, loc)
				if detail != "" {
					t.Fatal(detail)
				}
				w := window{spec: spec, duration: time.Minute}
				starts := make([]int, days)
				failures := 0
				fail := func(format string, args ...any) {
					if failures++; failures <= 3 {
						t.Errorf("%q: "+format, append([]any{cronExpr}, args...)...)
					}
				}
				for s, ok := w.nextStart(first.Add(-48 * time.Hour)); ok && s.Before(first.AddDate(5, 0, 2)); s, ok = w.nextStart(s) {
					shown := reading(s, loc)
					// The reading this start is for: the last one at this
					// time of day not after what the clock shows then.
					named := shown.Truncate(24 * time.Hour).Add(at)
					if named.After(shown) {
						named = named.AddDate(0, 0, -1)
					}
					if !shown.Equal(named) {
						if before := reading(s.Add(-time.Nanosecond), loc); !before.Before(named) {
							fail("starts at %s, showing %s: neither %s nor just after a jump over it", s, shown.Format(time.DateTime), named.Format(time.DateTime))
						}
					} else if earlier, ok := shownBefore(s, named, loc); ok {
						fail("starts at %s, but the clock had shown %s or later by %s", s, named.Format(time.DateTime), earlier)
					}
					if day := int(named.Sub(first) / (24 * time.Hour)); !named.Before(first) && day < days {
						starts[day]++
					}
				}
				for day, n := range starts {
					if n != 1 {
						fail("%s has %d starts", first.AddDate(0, 0, day).Format(time.DateOnly), n)
					}
				}
			}
		})
	}
}

// shownBefore returns an instant before s that showed reading r or a later
// one, if there is one: only where the clocks went back shortly before s,
// by less than 3h (two hours, in Antarctica/Troll, is the most any zone
// does now).
func shownBefore(s, r time.Time, loc *time.Location) (time.Time, bool) {
	if start, _ := s.In(loc).ZoneBounds(); start.IsZero() || s.Sub(start) >= 3*time.Hour {
		return time.Time{}, false
	}
	for back := time.Minute; back <= 3*time.Hour; back += time.Minute {
		if earlier := s.Add(-back); !reading(earlier, loc).Before(r) {
			return earlier, true
		}
	}
	return time.Time{}, false
}

// tzZones are the zones of Go's own tzdata, the one time/tzdata embeds.
type tzZones struct {
	names, files int
	// alike has one zone for each way zones behave from 2026 to 2030:
	// the same offsets, changing at the same instants.
	alike []*time.Location
}

// goZones reads the zones from $GOROOT/lib/time/zoneinfo.zip, which
// time/tzdata is generated from.
func goZones(t *testing.T) tzZones {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	r, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	var zones tzZones
	files, behaviours := map[string]bool{}, map[string]bool{}
	for _, f := range r.File {
		if f.FileInfo().IsDir() {
			continue
		}
		zones.names++
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if files[string(data)] {
			continue // a link, such as US/Eastern to America/New_York
		}
		files[string(data)] = true
		loc, err := time.LoadLocationFromTZData(f.Name, data)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if b := behaviour(loc); !behaviours[b] {
			behaviours[b] = true
			zones.alike = append(zones.alike, loc)
		}
	}
	zones.files = len(files)
	return zones
}

// behaviour describes loc from December 2025 to January 2031 by what
// window arithmetic reads of it: its periods of constant offset, as
// time.Time.ZoneBounds reports them (including where nothing changes).
func behaviour(loc *time.Location) string {
	var b strings.Builder
	from := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	for t := from; t.Before(time.Date(2031, 2, 1, 0, 0, 0, 0, time.UTC)); {
		_, offset := t.In(loc).Zone()
		start, end := t.In(loc).ZoneBounds()
		fmt.Fprintf(&b, "%d %d %d;", offset, max(start.Unix(), from.Unix()), end.Unix())
		if end = periodEnd(t, loc); end.IsZero() {
			break
		}
		t = end
	}
	return b.String()
}
