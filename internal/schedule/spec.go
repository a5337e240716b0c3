package schedule

import (
	"fmt"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// FromSpec reads a DynamicIngressState's spec.schedule. Start and end times
// that are not RFC 3339 come back as FieldErrors (the schema refuses them
// too); Validate reports the rest. The admission webhook and the controller
// both read a schedule through here, so they read it the same way.
func FromSpec(spec *v1beta1.Schedule) (Schedule, []FieldError) {
	out := Schedule{TimeZone: spec.TimeZone, Windows: make([]Window, 0, len(spec.Windows))}
	var errs []FieldError
	for i, w := range spec.Windows {
		path := fmt.Sprintf("windows[%d]", i)
		window := Window{Cron: w.Cron}
		if w.Duration != nil {
			window.Duration = w.Duration.Duration
		}
		var err *FieldError
		if window.Start, err = parseTime(path+".start", w.Start); err != nil {
			errs = append(errs, *err)
		}
		if window.End, err = parseTime(path+".end", w.End); err != nil {
			errs = append(errs, *err)
		}
		out.Windows = append(out.Windows, window)
	}
	return out, errs
}

// parseTime reads an RFC 3339 time; "" is the zero time (a missing field,
// which Validate names).
func parseTime(field, s string) (time.Time, *FieldError) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, &FieldError{Field: field, Value: s, Detail: "must be an RFC 3339 time with an offset, such as 2026-12-24T00:00:00+09:00"}
	}
	return t, nil
}
