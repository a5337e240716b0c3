package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	// The operator image may carry no zoneinfo of its own; embedding it
	// keeps every IANA name valid wherever the binary runs.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Compiled is a valid schedule made ready for At: crons parsed, time zone
// loaded. It is never changed after Compile, so it is safe for concurrent use.
type Compiled struct {
	windows []window
}

// window is a compiled Window: recurring when spec is set, else one-off.
type window struct {
	spec       *cron.SpecSchedule
	duration   time.Duration
	start, end time.Time
}

// Compile checks s and prepares it for At. It fails, with every FieldError
// joined, on exactly what Validate rejects.
func Compile(s Schedule) (*Compiled, error) {
	c, errs := compile(s)
	if errs != nil {
		all := make([]error, len(errs))
		for i, e := range errs {
			all[i] = e
		}
		return nil, errors.Join(all...)
	}
	return c, nil
}

// compile is the one pass behind both Validate and Compile, so the two can
// never disagree on what is valid.
func compile(s Schedule) (*Compiled, []FieldError) {
	loc, errs := loadLocation(s.TimeZone)
	switch n := len(s.Windows); {
	case n == 0:
		errs = append(errs, FieldError{Field: "windows", Value: "0", Detail: "must have at least 1 window"})
	case n > MaxWindows:
		errs = append(errs, FieldError{Field: "windows", Value: strconv.Itoa(n),
			Detail: fmt.Sprintf("must have at most %d windows", MaxWindows)})
	}
	c := &Compiled{windows: make([]window, 0, len(s.Windows))}
	for i, w := range s.Windows {
		cw, werrs := compileWindow(fmt.Sprintf("windows[%d]", i), w, loc)
		errs = append(errs, werrs...)
		c.windows = append(c.windows, cw)
	}
	if errs != nil {
		return nil, errs
	}
	return c, nil
}

// loadLocation resolves a TimeZone. On error it returns UTC as well, so the
// crons can still be checked and every error reported in one pass.
func loadLocation(name string) (*time.Location, []FieldError) {
	if strings.EqualFold(name, "Local") {
		// time.LoadLocation accepts it, but it means whatever zone the
		// operator's host happens to be in.
		return time.UTC, []FieldError{{Field: "timeZone", Value: name,
			Detail: "must be an IANA time zone name such as Asia/Tokyo, not Local"}}
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, []FieldError{{Field: "timeZone", Value: name,
			Detail: "unknown time zone: must be an IANA time zone name such as Asia/Tokyo"}}
	}
	return loc, nil
}

// compileWindow checks one window; path is its place, such as "windows[3]".
func compileWindow(path string, w Window, loc *time.Location) (window, []FieldError) {
	recurring := w.Cron != ""
	oneOff := !w.Start.IsZero() || !w.End.IsZero()
	switch {
	case recurring && oneOff:
		return window{}, []FieldError{{Field: path,
			Detail: "must be either recurring (cron and duration) or one-off (start and end), not both"}}
	case recurring:
		return compileRecurring(path, w, loc)
	case oneOff:
		return compileOneOff(path, w)
	default:
		return window{}, []FieldError{{Field: path,
			Detail: "must set either cron and duration (recurring) or start and end (one-off)"}}
	}
}

// compileRecurring checks a window with a cron expression.
func compileRecurring(path string, w Window, loc *time.Location) (window, []FieldError) {
	var errs []FieldError
	spec, detail := parseCron(w.Cron, loc)
	if detail != "" {
		errs = append(errs, FieldError{Field: path + ".cron", Value: w.Cron, Detail: detail})
	}
	switch {
	case w.Duration == 0:
		errs = append(errs, FieldError{Field: path + ".duration", Detail: "required for a recurring window"})
	case w.Duration < MinDuration || w.Duration > MaxDuration:
		errs = append(errs, FieldError{Field: path + ".duration", Value: w.Duration.String(),
			Detail: fmt.Sprintf("must be between %s and %s", formatDuration(MinDuration), formatDuration(MaxDuration))})
	}
	return window{spec: spec, duration: w.Duration}, errs
}

// formatDuration writes a limit the way users write it in YAML (1m, 168h),
// not the way time.Duration.String does (1m0s, 168h0m0s).
func formatDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

// parseCron parses a cron expression to be read on loc's wall clock. It
// returns the reason it is invalid, or "".
func parseCron(expr string, loc *time.Location) (*cron.SpecSchedule, string) {
	expr = strings.TrimSpace(expr)
	switch {
	case strings.Contains(expr, "TZ="):
		// A second place for the zone would let the two disagree; robfig
		// also panics on a TZ= prefix with nothing after it.
		return nil, "must not name a time zone (TZ= or CRON_TZ=); set timeZone instead"
	case strings.HasPrefix(expr, "@every"):
		return nil, "@every is not supported: it counts from when the operator started, not by the clock; use a 5-field cron expression"
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, "invalid cron expression: " + err.Error()
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		// Only @every yields another type, and it is rejected above.
		return nil, "unsupported cron expression"
	}
	// The parser leaves the zone as time.Local; the window arithmetic
	// (wallclock.go) reads the zone from here, so pin it to the schedule's.
	spec.Location = loc
	return spec, ""
}

// compileOneOff checks a window with a start and an end.
func compileOneOff(path string, w Window) (window, []FieldError) {
	var errs []FieldError
	if w.Duration != 0 {
		errs = append(errs, FieldError{Field: path + ".duration", Value: w.Duration.String(),
			Detail: "must not be set on a one-off window: it lasts from start to end"})
	}
	switch {
	case w.Start.IsZero():
		errs = append(errs, FieldError{Field: path + ".start", Detail: "required for a one-off window"})
	case w.End.IsZero():
		errs = append(errs, FieldError{Field: path + ".end", Detail: "required for a one-off window"})
	case !w.End.After(w.Start):
		errs = append(errs, FieldError{Field: path + ".end", Value: w.End.Format(time.RFC3339Nano),
			Detail: "must be after start (" + w.Start.Format(time.RFC3339Nano) + ")"})
	}
	return window{start: w.Start, end: w.End}, errs
}
