package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// rfc parses an RFC 3339 time, as a one-off window is written in YAML.
func rfc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// daily is a valid recurring window, to pad schedules with.
var daily = Window{Cron: "0 2 * * *", Duration: time.Hour}

// windows returns n valid windows.
func windows(n int) []Window {
	ws := make([]Window, n)
	for i := range ws {
		ws[i] = daily
	}
	return ws
}

func TestValidate(t *testing.T) {
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	jan2 := jan1.Add(24 * time.Hour)
	oneOff := Window{Start: jan1, End: jan2}
	tzMsg := "must not name a time zone (TZ= or CRON_TZ=); set timeZone instead"
	tests := []struct {
		name string
		s    Schedule
		want []FieldError
	}{
		{"recurring window, UTC by default", Schedule{Windows: []Window{daily}}, nil},
		{"one-off window", Schedule{Windows: []Window{oneOff}}, nil},
		{"IANA time zone", Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{daily}}, nil},
		{"explicit UTC", Schedule{TimeZone: "UTC", Windows: []Window{daily}}, nil},
		{"descriptors are accepted", Schedule{Windows: []Window{
			{Cron: "@yearly", Duration: time.Hour}, {Cron: "@annually", Duration: time.Hour},
			{Cron: "@monthly", Duration: time.Hour}, {Cron: "@weekly", Duration: time.Hour},
			{Cron: "@daily", Duration: time.Hour}, {Cron: "@midnight", Duration: time.Hour},
			{Cron: "@hourly", Duration: time.Hour},
		}}, nil},
		{"cron surrounded by spaces", Schedule{Windows: []Window{{Cron: " 0 2 * * 0 ", Duration: time.Hour}}}, nil},
		{"names for months and days", Schedule{Windows: []Window{{Cron: "0 2 * dec sun", Duration: time.Hour}}}, nil},
		{"a cron that never fires is still valid", Schedule{Windows: []Window{{Cron: "0 0 30 2 *", Duration: time.Hour}}}, nil},
		{"shortest and longest durations", Schedule{Windows: []Window{
			{Cron: "0 2 * * *", Duration: time.Minute}, {Cron: "0 2 * * *", Duration: 168 * time.Hour},
		}}, nil},
		{"32 windows", Schedule{Windows: windows(32)}, nil},

		{"unknown time zone", Schedule{TimeZone: "Mars/Olympus_Mons", Windows: []Window{daily}}, []FieldError{
			{Field: "timeZone", Value: "Mars/Olympus_Mons", Detail: "unknown time zone: must be an IANA time zone name such as Asia/Tokyo"},
		}},
		{"Local is not a time zone", Schedule{TimeZone: "Local", Windows: []Window{daily}}, []FieldError{
			{Field: "timeZone", Value: "Local", Detail: "must be an IANA time zone name such as Asia/Tokyo, not Local"},
		}},
		{"no windows", Schedule{}, []FieldError{
			{Field: "windows", Value: "0", Detail: "must have at least 1 window"},
		}},
		{"33 windows", Schedule{Windows: windows(33)}, []FieldError{
			{Field: "windows", Value: "33", Detail: "must have at most 32 windows"},
		}},
		{"both cron and start/end", Schedule{Windows: []Window{daily, {Cron: "0 2 * * *", Duration: time.Hour, Start: jan1, End: jan2}}}, []FieldError{
			{Field: "windows[1]", Detail: "must be either recurring (cron and duration) or one-off (start and end), not both"},
		}},
		{"cron and only an end", Schedule{Windows: []Window{{Cron: "0 2 * * *", Duration: time.Hour, End: jan2}}}, []FieldError{
			{Field: "windows[0]", Detail: "must be either recurring (cron and duration) or one-off (start and end), not both"},
		}},
		{"neither cron nor start/end", Schedule{Windows: []Window{{Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0]", Detail: "must set either cron and duration (recurring) or start and end (one-off)"},
		}},
		{"cron with four fields", Schedule{Windows: []Window{{Cron: "0 2 * *", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "0 2 * *", Detail: "invalid cron expression: expected exactly 5 fields, found 4: [0 2 * *]"},
		}},
		{"cron with seconds", Schedule{Windows: []Window{{Cron: "0 0 2 * * *", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "0 0 2 * * *", Detail: "invalid cron expression: expected exactly 5 fields, found 6: [0 0 2 * * *]"},
		}},
		{"minute out of range", Schedule{Windows: []Window{{Cron: "60 2 * * *", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "60 2 * * *", Detail: "invalid cron expression: end of range (60) above maximum (59): 60"},
		}},
		{"day of week 7", Schedule{Windows: []Window{{Cron: "0 2 * * 7", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "0 2 * * 7", Detail: "invalid cron expression: end of range (7) above maximum (6): 7"},
		}},
		{"unknown descriptor", Schedule{Windows: []Window{{Cron: "@reboot", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "@reboot", Detail: "invalid cron expression: unrecognized descriptor: @reboot"},
		}},
		{"@every", Schedule{Windows: []Window{{Cron: "@every 1h", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "@every 1h", Detail: "@every is not supported: it counts from when the operator started, not by the clock; use a 5-field cron expression"},
		}},
		{"@every after spaces", Schedule{Windows: []Window{{Cron: "  @every 1h", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "  @every 1h", Detail: "@every is not supported: it counts from when the operator started, not by the clock; use a 5-field cron expression"},
		}},
		{"TZ= prefix", Schedule{Windows: []Window{{Cron: "TZ=Asia/Tokyo 0 2 * * *", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "TZ=Asia/Tokyo 0 2 * * *", Detail: tzMsg},
		}},
		{"CRON_TZ= prefix", Schedule{Windows: []Window{{Cron: "CRON_TZ=UTC 0 2 * * *", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "CRON_TZ=UTC 0 2 * * *", Detail: tzMsg},
		}},
		{"TZ= alone, on which robfig panics", Schedule{Windows: []Window{{Cron: "TZ=UTC", Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "TZ=UTC", Detail: tzMsg},
		}},
		{"duration missing", Schedule{Windows: []Window{{Cron: "0 2 * * *"}}}, []FieldError{
			{Field: "windows[0].duration", Detail: "required for a recurring window"},
		}},
		{"duration too short", Schedule{Windows: []Window{{Cron: "0 2 * * *", Duration: 59 * time.Second}}}, []FieldError{
			{Field: "windows[0].duration", Value: "59s", Detail: "must be between 1m and 168h"},
		}},
		{"duration negative", Schedule{Windows: []Window{{Cron: "0 2 * * *", Duration: -time.Hour}}}, []FieldError{
			{Field: "windows[0].duration", Value: "-1h0m0s", Detail: "must be between 1m and 168h"},
		}},
		{"duration too long", Schedule{Windows: []Window{{Cron: "0 2 * * *", Duration: 168*time.Hour + time.Nanosecond}}}, []FieldError{
			{Field: "windows[0].duration", Value: "168h0m0.000000001s", Detail: "must be between 1m and 168h"},
		}},
		{"bad cron and bad duration in one window", Schedule{Windows: []Window{{Cron: "x", Duration: 200 * time.Hour}}}, []FieldError{
			{Field: "windows[0].cron", Value: "x", Detail: "invalid cron expression: expected exactly 5 fields, found 1: [x]"},
			{Field: "windows[0].duration", Value: "200h0m0s", Detail: "must be between 1m and 168h"},
		}},
		{"duration on a one-off window", Schedule{Windows: []Window{{Start: jan1, End: jan2, Duration: time.Hour}}}, []FieldError{
			{Field: "windows[0].duration", Value: "1h0m0s", Detail: "must not be set on a one-off window: it lasts from start to end"},
		}},
		{"one-off without end", Schedule{Windows: []Window{{Start: jan1}}}, []FieldError{
			{Field: "windows[0].end", Detail: "required for a one-off window"},
		}},
		{"one-off without start", Schedule{Windows: []Window{{End: jan2}}}, []FieldError{
			{Field: "windows[0].start", Detail: "required for a one-off window"},
		}},
		{"end equal to start", Schedule{Windows: []Window{{Start: jan1, End: jan1}}}, []FieldError{
			{Field: "windows[0].end", Value: "2026-01-01T00:00:00Z", Detail: "must be after start (2026-01-01T00:00:00Z)"},
		}},
		{"end before start, in other offsets", Schedule{Windows: []Window{{
			Start: rfc(t, "2026-12-24T00:00:00+09:00"), End: rfc(t, "2026-12-23T04:00:00-10:00"),
		}}}, []FieldError{
			{Field: "windows[0].end", Value: "2026-12-23T04:00:00-10:00", Detail: "must be after start (2026-12-24T00:00:00+09:00)"},
		}},
		{"every error at once, in field order", Schedule{TimeZone: "Nowhere", Windows: []Window{
			daily, {Cron: "0 25 * * *", Duration: time.Hour}, {Start: jan2, End: jan1}, {},
		}}, []FieldError{
			{Field: "timeZone", Value: "Nowhere", Detail: "unknown time zone: must be an IANA time zone name such as Asia/Tokyo"},
			{Field: "windows[1].cron", Value: "0 25 * * *", Detail: "invalid cron expression: end of range (25) above maximum (23): 25"},
			{Field: "windows[2].end", Value: "2026-01-01T00:00:00Z", Detail: "must be after start (2026-01-02T00:00:00Z)"},
			{Field: "windows[3]", Detail: "must set either cron and duration (recurring) or start and end (one-off)"},
		}},
		{"too many windows and a bad one among them", Schedule{Windows: append(windows(33), Window{Cron: "0 2 * * *"})}, []FieldError{
			{Field: "windows", Value: "34", Detail: "must have at most 32 windows"},
			{Field: "windows[33].duration", Detail: "required for a recurring window"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}

			// Compile must reject exactly what Validate does, saying the same.
			c, err := Compile(tt.s)
			if (err == nil) != (tt.want == nil) || (c == nil) != (tt.want != nil) {
				t.Fatalf("Compile() = %v, %v; want an error: %t", c, err, tt.want != nil)
			}
			for _, fe := range tt.want {
				if !strings.Contains(err.Error(), fe.Error()) {
					t.Errorf("Compile() error %q does not contain %q", err, fe.Error())
				}
			}
		})
	}
}

func TestFieldErrorError(t *testing.T) {
	tests := []struct {
		err  FieldError
		want string
	}{
		{FieldError{Field: "windows[0].cron", Value: "0 2 * *", Detail: "bad"}, `windows[0].cron: "0 2 * *": bad`},
		{FieldError{Field: "windows[0].duration", Detail: "required for a recurring window"}, "windows[0].duration: required for a recurring window"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

// ExampleCompile shows the contract's example schedule at work.
func ExampleCompile() {
	c, err := Compile(Schedule{
		TimeZone: "Asia/Tokyo",
		Windows: []Window{
			{Cron: "0 2 * * 0", Duration: 2 * time.Hour},
			{
				Start: time.Date(2026, 12, 24, 0, 0, 0, 0, time.FixedZone("", 9*3600)),
				End:   time.Date(2026, 12, 26, 0, 0, 0, 0, time.FixedZone("", 9*3600)),
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := c.At(time.Date(2026, 1, 3, 17, 30, 0, 0, time.UTC))
	fmt.Println(o.Open, o.Next)
	// Output: true 2026-01-03 19:00:00 +0000 UTC
}

func TestFromSpec(t *testing.T) {
	spec := &v1beta1.Schedule{TimeZone: "Asia/Tokyo", Windows: []v1beta1.ScheduleWindow{
		{Cron: "0 2 * * 0", Duration: &metav1.Duration{Duration: 2 * time.Hour}},
		{Start: "2026-12-24T00:00:00+09:00", End: "2026-12-26T00:00:00+09:00"},
		{Start: "24 Dec 2026", End: "2026-12-26"},
	}}
	got, errs := FromSpec(spec)
	want := Schedule{TimeZone: "Asia/Tokyo", Windows: []Window{
		{Cron: "0 2 * * 0", Duration: 2 * time.Hour},
		{Start: rfc(t, "2026-12-24T00:00:00+09:00"), End: rfc(t, "2026-12-26T00:00:00+09:00")},
		{},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schedule (-want +got):\n%s", diff)
	}
	wantErrs := []FieldError{
		{Field: "windows[2].start", Value: "24 Dec 2026", Detail: "must be an RFC 3339 time with an offset, such as 2026-12-24T00:00:00+09:00"},
		{Field: "windows[2].end", Value: "2026-12-26", Detail: "must be an RFC 3339 time with an offset, such as 2026-12-24T00:00:00+09:00"},
	}
	if diff := cmp.Diff(wantErrs, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
