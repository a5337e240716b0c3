package states

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
)

// decemberMinutes is open every minute of December: one run of 44640
// one-minute windows, longer than the schedule follows a run.
var decemberMinutes = &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{
	{Cron: "* * * 12 *", Duration: &metav1.Duration{Duration: time.Minute}}}}

// chainedPastAYear is two one-off windows, the first over a year long,
// the second starting where it ends.
var chainedPastAYear = &v1beta1.Schedule{Windows: []v1beta1.ScheduleWindow{
	{Start: "2026-01-01T00:00:00Z", End: "2027-02-05T00:00:00Z"},
	{Start: "2027-02-05T00:00:00Z", End: "2027-05-16T00:00:00Z"},
}}

func scheduleState(s *v1beta1.Schedule) *v1beta1.DynamicIngressState {
	return &v1beta1.DynamicIngressState{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: v1beta1.DynamicIngressStateSpec{Schedule: s}}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestScheduledStatusBeyondTheHorizon: when the schedule does not follow an
// open run to its end, the status has no nextTransitionTime, Ready says how
// far the operator looked, and the state is to be looked at again within a
// day instead of never.
func TestScheduledStatusBeyondTheHorizon(t *testing.T) {
	tests := []struct {
		name        string
		schedule    *v1beta1.Schedule
		now         string
		wantNext    string // status.nextTransitionTime, "" when absent
		wantMessage string
		wantWake    string
	}{
		{"every minute of December, asked on the 1st", decemberMinutes, "2026-12-01T00:00:00Z", "",
			"The schedule is open with no change before 2026-12-08T00:02:00Z, as far as the operator looks ahead; it looks again at 2026-12-02T00:00:00Z",
			"2026-12-02T00:00:00Z"},
		{"every minute of December, its end within reach", decemberMinutes, "2026-12-26T00:00:00Z", "2027-01-01T00:00:00Z",
			"The schedule is open until 2027-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"two one-off windows chained past a year", chainedPastAYear, "2026-01-01T00:00:00Z", "",
			"The schedule is open with no change before 2027-05-16T00:00:00Z, as far as the operator looks ahead; it looks again at 2026-01-02T00:00:00Z",
			"2026-01-02T00:00:00Z"},
		{"the chained windows, where they meet within a year", chainedPastAYear, "2026-03-01T00:00:00Z", "2027-05-16T00:00:00Z",
			"The schedule is open until 2027-05-16T00:00:00Z", "2027-05-16T00:00:00Z"},
		{"the chained windows, after they end", chainedPastAYear, "2027-05-16T00:00:00Z", "",
			"The schedule is closed; no window lies ahead", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, wake := decision.ScheduledStatus(scheduleState(tt.schedule), metav1.NewTime(mustTime(t, tt.now)))
			var want, got struct{ Next, Message, Wake string }
			want.Next, want.Message, want.Wake = tt.wantNext, tt.wantMessage, tt.wantWake
			if status.NextTransitionTime != nil {
				got.Next = status.NextTransitionTime.UTC().Format(time.RFC3339)
			}
			if len(status.Conditions) == 1 {
				got.Message = status.Conditions[0].Message
			}
			if !wake.IsZero() {
				got.Wake = wake.UTC().Format(time.RFC3339)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decision.ScheduledStatus at %s (-want +got):\n%s", tt.now, diff)
			}
		})
	}
}

// TestBoundaryTimersFollowARunPastTheHorizon plays the state reconciler on
// a fake clock: each time the boundary timer wakes it, it computes the
// status and sets the timer again. A December of one-minute windows, asked
// about on 1 December, is open past what the schedule follows; the timer
// must still wake it, daily, until the run's end is in sight, and the state
// closes at the end of December.
func TestBoundaryTimersFollowARunPastTheHorizon(t *testing.T) {
	start := mustTime(t, "2026-12-01T00:00:00Z")
	clk := clocktesting.NewFakeClock(start)
	var mu sync.Mutex
	woken := 0
	b := newBoundaryTimers(clk, func(string) { mu.Lock(); woken++; mu.Unlock() })
	state := scheduleState(decemberMinutes)

	type reconcile struct {
		At   time.Time
		Body string
		Wake time.Time
	}
	var got []reconcile
	for range 40 {
		status, wake := decision.ScheduledStatus(state, metav1.NewTime(clk.Now()))
		state.Status = status
		got = append(got, reconcile{At: clk.Now(), Body: status.Body, Wake: wake})
		b.set("ns/december", wake)
		if wake.IsZero() || status.Body == decision.ScheduleClosedBody {
			break
		}
		before := woken
		clk.SetTime(wake)
		mu.Lock()
		fired := woken > before
		mu.Unlock()
		if !fired {
			t.Fatalf("the timer set for %s did not fire", wake)
		}
	}

	// Daily while no end is known, from 1 December until the 25th, when
	// the end is within the week of minutes the schedule follows; then at
	// the end.
	var want []reconcile
	for day := 0; day < 24; day++ {
		want = append(want, reconcile{At: start.AddDate(0, 0, day), Body: decision.ScheduleOpenBody, Wake: start.AddDate(0, 0, day+1)})
	}
	end := mustTime(t, "2027-01-01T00:00:00Z")
	want = append(want, reconcile{At: start.AddDate(0, 0, 24), Body: decision.ScheduleOpenBody, Wake: end})
	want = append(want, reconcile{At: end, Body: decision.ScheduleClosedBody, Wake: mustTime(t, "2027-12-01T00:00:00Z")})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reconciles (-want +got):\n%s", diff)
	}
	if got := ptr.Deref(state.Status.NextTransitionTime, metav1.Time{}).UTC(); !got.Equal(mustTime(t, "2027-12-01T00:00:00Z")) {
		t.Errorf("nextTransitionTime after the run %s, want 2027-12-01T00:00:00Z", got)
	}
}
