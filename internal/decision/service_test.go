package decision

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// serviceT0 is when every timeline starts; times in them are after it.
var serviceT0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// seen is what the manager sees of a state's Service at a moment: its
// ready count, or that it does not exist; spec, when set, changes the
// state's spec first (and bumps its generation), as an edit would.
type seen struct {
	at      time.Duration
	ready   int
	missing bool
	spec    func(*v1beta1.ServiceSource)
}

// evaluation is one call of ServiceStatus and what the state's status is
// after it.
type evaluation struct {
	At time.Duration
	// Code is status.statusCode.
	Code string
	// Wrote is whether the status returned differs from the one the state
	// had (equality.Semantic.DeepEqual): whether the manager writes it.
	Wrote bool
	// Recheck is when ServiceStatus asked to be called again.
	Recheck time.Duration
	// Generation is status.observedGeneration, which the Ready condition's
	// must equal.
	Generation int64
	// Ready is the Ready condition: status, reason and message.
	Ready string
}

// serviceTimeline is one manager's view of a service state: it keeps
// since when the Service's count has been on its side of minReady exactly
// as the states reconciler does (a new side starts the clock; a missing
// Service forgets it; a new manager starts with none), calls ServiceStatus
// at each change it sees and when ServiceStatus asks to be called again,
// and writes the status back into the state.
type serviceTimeline struct {
	t     *testing.T
	state *v1beta1.DynamicIngressState
	// side is which side of minReady the count is on, and since when;
	// nil when the manager has not seen the Service.
	side        *serviceSide
	evaluations []evaluation
}

type serviceSide struct {
	available bool
	since     time.Time
}

func (tl *serviceTimeline) evaluate(at time.Duration, view seen) time.Duration {
	now := serviceT0.Add(at)
	since := now
	if view.missing {
		tl.side = nil
	} else {
		available := ServiceAvailable(tl.state.Spec.Service, view.ready)
		if tl.side == nil || tl.side.available != available {
			tl.side = &serviceSide{available, now}
		}
		since = tl.side.since
	}
	status, recheck := ServiceStatus(tl.state, ServiceCount{Exists: !view.missing, Ready: view.ready}, since, now)
	e := evaluation{At: at, Code: status.StatusCode, Recheck: recheck, Generation: status.ObservedGeneration,
		Wrote: !equality.Semantic.DeepEqual(status, tl.state.Status)}
	if c := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionReady); c != nil {
		e.Ready = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
		if c.ObservedGeneration != status.ObservedGeneration {
			tl.t.Errorf("at %s: the Ready condition's observedGeneration is %d, the status's %d", at, c.ObservedGeneration, status.ObservedGeneration)
		}
	}
	if status.Mode != v1beta1.StateModeService {
		tl.t.Errorf("at %s: status.mode = %q, want %q", at, status.Mode, v1beta1.StateModeService)
	}
	tl.state.Status = status
	tl.evaluations = append(tl.evaluations, e)
	return recheck
}

// run sees each change in turn and, between them, calls again when asked
// to; stop ends the run (a restart) at that time, rechecks due then or
// later dropped: 0 follows every recheck after the last change.
func (tl *serviceTimeline) run(changes []seen, stop time.Duration) {
	const limit = 100
	var last seen
	recheckAt := time.Duration(-1)
	for i := 0; len(tl.evaluations) < limit; {
		due := recheckAt >= 0 && (i == len(changes) || recheckAt < changes[i].at) && (stop == 0 || recheckAt < stop)
		switch {
		case due:
			at := recheckAt
			recheckAt = -1
			if r := tl.evaluate(at, seen{at: at, ready: last.ready, missing: last.missing}); r > 0 {
				recheckAt = at + r
			}
		case i < len(changes):
			last = changes[i]
			i++
			if last.spec != nil {
				last.spec(tl.state.Spec.Service)
				tl.state.Generation++
			}
			recheckAt = -1
			if r := tl.evaluate(last.at, last); r > 0 {
				recheckAt = last.at + r
			}
		default:
			return
		}
	}
	tl.t.Fatalf("more than %d evaluations: ServiceStatus keeps asking to be called again", limit)
}

// turned is the Ready condition after a change of answer.
func turned(ready, minReady int, code string) string {
	return fmt.Sprintf("True EndpointsCounted: Service ns/web had %d ready endpoints (minReady %d) when the answer turned %s", ready, minReady, code)
}

const notFound = "False ServiceNotFound: Service ns/web does not exist"

// entry is a history entry: when, which code, why.
type entry struct {
	Sequence int64
	At       time.Duration
	Code     string
	Cause    v1beta1.HistoryCause
}

// Short units for the timelines.
const (
	msec = time.Millisecond
	sec  = time.Second
)

// TestServiceStatusTimeline: the hysteresis of a state that follows a
// Service, as timelines of what the manager sees: the answer turns only
// once the count has held its side for unavailableAfter (to 503) or
// availableAfter (to 200), counted from when it last crossed; until then
// nothing is written. The first answer, and the first after the Service
// comes back, are given at once.
func TestServiceStatusTimeline(t *testing.T) {
	tests := []struct {
		name string
		// state is the state, its status as a previous manager left it
		// when before is set; minReady 1, 10s down, 30s up unless changed.
		state func(*builders.StateWrapper)
		// before runs with a manager that then stops at changes[0].at;
		// changes run with a new one.
		before  []seen
		changes []seen
		want    []evaluation
		// wantHistory, when set, is status.history at the end, newest
		// first.
		wantHistory []entry
	}{
		{
			name:    "the first answer, available, at once",
			changes: []seen{{at: 0, ready: 2}},
			want:    []evaluation{{0, "200", true, 0, 1, turned(2, 1, "200")}},
			wantHistory: []entry{
				{1, 0, "200", v1beta1.HistoryCauseService},
			},
		},
		{
			name:    "the first answer, unavailable, at once",
			changes: []seen{{at: 0, ready: 0}},
			want:    []evaluation{{0, "503", true, 0, 1, turned(0, 1, "503")}},
			wantHistory: []entry{
				{1, 0, "503", v1beta1.HistoryCauseService},
			},
		},
		{
			name:    "a dip shorter than unavailableAfter writes nothing",
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}, {at: 14*sec + 999*msec, ready: 0}, {at: 14*sec + 999*msec, ready: 1}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{14*sec + 999*msec, "200", false, msec, 1, turned(2, 1, "200")},
				{14*sec + 999*msec, "200", false, 0, 1, turned(2, 1, "200")},
			},
			wantHistory: []entry{{1, 0, "200", v1beta1.HistoryCauseService}},
		},
		{
			name:    "a dip that lasts turns the answer at exactly unavailableAfter",
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}, {at: 14*sec + 999*msec, ready: 0}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{14*sec + 999*msec, "200", false, msec, 1, turned(2, 1, "200")},
				{15 * sec, "503", true, 0, 1, turned(0, 1, "503")},
			},
			wantHistory: []entry{
				{2, 15 * sec, "503", v1beta1.HistoryCauseService},
				{1, 0, "200", v1beta1.HistoryCauseService},
			},
		},
		{
			name:    "back up turns the answer only after availableAfter",
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}, {at: 20 * sec, ready: 1}, {at: 49*sec + 999*msec, ready: 1}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{15 * sec, "503", true, 0, 1, turned(0, 1, "503")},
				{20 * sec, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				{49*sec + 999*msec, "503", false, msec, 1, turned(0, 1, "503")},
				{50 * sec, "200", true, 0, 1, turned(1, 1, "200")},
			},
			wantHistory: []entry{
				{3, 50 * sec, "200", v1beta1.HistoryCauseService},
				{2, 15 * sec, "503", v1beta1.HistoryCauseService},
				{1, 0, "200", v1beta1.HistoryCauseService},
			},
		},
		{
			name:    "churn above minReady never writes",
			changes: []seen{{at: 0, ready: 3}, {at: sec, ready: 2}, {at: 2 * sec, ready: 5}, {at: 3 * sec, ready: 1}, {at: time.Hour, ready: 1}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(3, 1, "200")},
				{sec, "200", false, 0, 1, turned(3, 1, "200")},
				{2 * sec, "200", false, 0, 1, turned(3, 1, "200")},
				{3 * sec, "200", false, 0, 1, turned(3, 1, "200")},
				{time.Hour, "200", false, 0, 1, turned(3, 1, "200")},
			},
			wantHistory: []entry{{1, 0, "200", v1beta1.HistoryCauseService}},
		},
		{
			name:  "the counts in the message are those when the answer turned",
			state: func(w *builders.StateWrapper) { w.MinReady(3) },
			changes: []seen{{at: 0, ready: 5}, {at: 5 * sec, ready: 2}, {at: 8 * sec, ready: 1},
				{at: 20 * sec, ready: 0}, {at: 21 * sec, ready: 2}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(5, 3, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(5, 3, "200")},
				// Still below: the clock runs on from 5s.
				{8 * sec, "200", false, 7 * sec, 1, turned(5, 3, "200")},
				{15 * sec, "503", true, 0, 1, turned(1, 3, "503")},
				{20 * sec, "503", false, 0, 1, turned(1, 3, "503")},
				{21 * sec, "503", false, 0, 1, turned(1, 3, "503")},
			},
		},
		{
			name: "flapping across minReady starts the wait again, both ways",
			changes: []seen{
				{at: 0, ready: 1}, {at: sec, ready: 0}, {at: 6 * sec, ready: 1}, {at: 8 * sec, ready: 0}, {at: 11 * sec, ready: 0},
				{at: 20 * sec, ready: 1}, {at: 45 * sec, ready: 0}, {at: 46 * sec, ready: 1}, {at: 50 * sec, ready: 1},
			},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(1, 1, "200")},
				{sec, "200", false, 10 * sec, 1, turned(1, 1, "200")},
				{6 * sec, "200", false, 0, 1, turned(1, 1, "200")},
				{8 * sec, "200", false, 10 * sec, 1, turned(1, 1, "200")},
				// 10s after the first dip, 3s into the second.
				{11 * sec, "200", false, 7 * sec, 1, turned(1, 1, "200")},
				{18 * sec, "503", true, 0, 1, turned(0, 1, "503")},
				{20 * sec, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				{45 * sec, "503", false, 0, 1, turned(0, 1, "503")},
				{46 * sec, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				// 30s after the first rise, 4s into the second.
				{50 * sec, "503", false, 26 * sec, 1, turned(0, 1, "503")},
				{76 * sec, "200", true, 0, 1, turned(1, 1, "200")},
			},
		},
		{
			name:    "unavailableAfter 0 turns to 503 at once",
			state:   func(w *builders.StateWrapper) { w.UnavailableAfter(0) },
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}, {at: 6 * sec, ready: 1}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "503", true, 0, 1, turned(0, 1, "503")},
				{6 * sec, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				{36 * sec, "200", true, 0, 1, turned(1, 1, "200")},
			},
		},
		{
			name:    "availableAfter 0 turns to 200 at once",
			state:   func(w *builders.StateWrapper) { w.AvailableAfter(0) },
			changes: []seen{{at: 0, ready: 0}, {at: 5 * sec, ready: 1}, {at: 6 * sec, ready: 0}},
			want: []evaluation{
				{0, "503", true, 0, 1, turned(0, 1, "503")},
				{5 * sec, "200", true, 0, 1, turned(1, 1, "200")},
				{6 * sec, "200", false, 10 * sec, 1, turned(1, 1, "200")},
				{16 * sec, "503", true, 0, 1, turned(0, 1, "503")},
			},
		},
		{
			name:    "a restarted manager keeps an answer that still holds",
			before:  []seen{{at: 0, ready: 2}},
			changes: []seen{{at: time.Hour, ready: 2}},
			want:    []evaluation{{time.Hour, "200", false, 0, 1, turned(2, 1, "200")}},
		},
		{
			name:    "a restarted manager waits the full delay to turn to 503",
			before:  []seen{{at: 0, ready: 2}},
			changes: []seen{{at: time.Hour, ready: 0}},
			want: []evaluation{
				{time.Hour, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{time.Hour + 10*sec, "503", true, 0, 1, turned(0, 1, "503")},
			},
		},
		{
			name:    "a restarted manager waits the full delay to turn to 200",
			before:  []seen{{at: 0, ready: 0}},
			changes: []seen{{at: time.Hour, ready: 3}},
			want: []evaluation{
				{time.Hour, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				{time.Hour + 30*sec, "200", true, 0, 1, turned(3, 1, "200")},
			},
		},
		{
			name: "a restart during a wait starts it again",
			// The old manager would have turned the answer at 15s.
			before:  []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}},
			changes: []seen{{at: 12 * sec, ready: 0}},
			want: []evaluation{
				{12 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{22 * sec, "503", true, 0, 1, turned(0, 1, "503")},
			},
			wantHistory: []entry{
				{2, 22 * sec, "503", v1beta1.HistoryCauseService},
				{1, 0, "200", v1beta1.HistoryCauseService},
			},
		},
		{
			name: "a missing Service has no response; when it comes back the first answer is at once",
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, missing: true}, {at: 6 * sec, missing: true},
				{at: 7 * sec, ready: 0}, {at: 8 * sec, ready: 2}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "", true, 0, 1, notFound},
				{6 * sec, "", false, 0, 1, notFound},
				{7 * sec, "503", true, 0, 1, turned(0, 1, "503")},
				{8 * sec, "503", false, 30 * sec, 1, turned(0, 1, "503")},
				{38 * sec, "200", true, 0, 1, turned(2, 1, "200")},
			},
			wantHistory: []entry{
				{4, 38 * sec, "200", v1beta1.HistoryCauseService},
				{3, 7 * sec, "503", v1beta1.HistoryCauseService},
				{2, 5 * sec, "", v1beta1.HistoryCauseNoResponse},
				{1, 0, "200", v1beta1.HistoryCauseService},
			},
		},
		{
			name:    "a Service that goes during a wait ends it",
			changes: []seen{{at: 0, ready: 2}, {at: 5 * sec, ready: 0}, {at: 8 * sec, missing: true}, {at: 9 * sec, ready: 2}},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{8 * sec, "", true, 0, 1, notFound},
				{9 * sec, "200", true, 0, 1, turned(2, 1, "200")},
			},
		},
		{
			name:    "a Service missing from the start",
			changes: []seen{{at: 0, missing: true}, {at: sec, missing: true}, {at: 2 * sec, ready: 1}},
			want: []evaluation{
				{0, "", true, 0, 1, notFound},
				{sec, "", false, 0, 1, notFound},
				{2 * sec, "200", true, 0, 1, turned(1, 1, "200")},
			},
			wantHistory: []entry{{1, 2 * sec, "200", v1beta1.HistoryCauseService}},
		},
		{
			name: "minReady raised: observedGeneration follows at once, the answer after unavailableAfter",
			changes: []seen{
				{at: 0, ready: 2},
				{at: 5 * sec, ready: 2, spec: func(src *v1beta1.ServiceSource) { src.MinReady = ptr.To[int32](3) }},
				{at: 7 * sec, ready: 2},
			},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", true, 10 * sec, 2, turned(2, 1, "200")},
				{7 * sec, "200", false, 8 * sec, 2, turned(2, 1, "200")},
				{15 * sec, "503", true, 0, 2, turned(2, 3, "503")},
			},
		},
		{
			name: "unavailableAfter lengthened during a wait: the wait is the new one, from when the count crossed",
			changes: []seen{
				{at: 0, ready: 2}, {at: 5 * sec, ready: 0},
				{at: 8 * sec, ready: 0, spec: func(src *v1beta1.ServiceSource) { src.UnavailableAfter = &metav1.Duration{Duration: 20 * sec} }},
			},
			want: []evaluation{
				{0, "200", true, 0, 1, turned(2, 1, "200")},
				{5 * sec, "200", false, 10 * sec, 1, turned(2, 1, "200")},
				{8 * sec, "200", true, 17 * sec, 2, turned(2, 1, "200")},
				{25 * sec, "503", true, 0, 2, turned(0, 1, "503")},
			},
		},
		{
			name: "a state that was probed gives its first Service answer at once",
			state: func(w *builders.StateWrapper) {
				w.Status = v1beta1.DynamicIngressStateStatus{Mode: v1beta1.StateModeProbe, StatusCode: "200", Body: "ok",
					LastUpdateTime: &metav1.MicroTime{Time: serviceT0.Add(-time.Hour)},
					History:        []v1beta1.HistoryEntry{{Sequence: 7, Time: metav1.MicroTime{Time: serviceT0.Add(-time.Hour)}, StatusCode: "200", Cause: v1beta1.HistoryCauseProbe}},
					Conditions: []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded",
						Message: "probed", LastTransitionTime: metav1.NewTime(serviceT0.Add(-time.Hour))}}}
			},
			changes: []seen{{at: 0, ready: 0}},
			want:    []evaluation{{0, "503", true, 0, 1, turned(0, 1, "503")}},
			wantHistory: []entry{
				{8, 0, "503", v1beta1.HistoryCauseService},
				{7, -time.Hour, "200", v1beta1.HistoryCauseProbe},
			},
		},
		{
			name: "a state that was fixed at the same code gives its Service answer at once",
			state: func(w *builders.StateWrapper) {
				w.Status = v1beta1.DynamicIngressStateStatus{Mode: v1beta1.StateModeFixed, StatusCode: "200", Body: "fixed",
					LastUpdateTime: &metav1.MicroTime{Time: serviceT0.Add(-time.Hour)},
					History:        []v1beta1.HistoryEntry{{Sequence: 1, Time: metav1.MicroTime{Time: serviceT0.Add(-time.Hour)}, StatusCode: "200", Cause: v1beta1.HistoryCauseFixed}}}
			},
			changes: []seen{{at: 0, ready: 4}},
			want:    []evaluation{{0, "200", true, 0, 1, turned(4, 1, "200")}},
			wantHistory: []entry{
				{2, 0, "200", v1beta1.HistoryCauseService},
				{1, -time.Hour, "200", v1beta1.HistoryCauseFixed},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := builders.ServiceState("ns", "flag", "web").MinReady(1).UnavailableAfter(10 * sec).AvailableAfter(30 * sec)
			w.Generation = 1
			if tt.state != nil {
				tt.state(w)
			}
			state := w.Obj()
			if tt.before != nil {
				(&serviceTimeline{t: t, state: state}).run(tt.before, tt.changes[0].at)
			}
			tl := &serviceTimeline{t: t, state: state}
			tl.run(tt.changes, 0)
			if diff := cmp.Diff(tt.want, tl.evaluations); diff != "" {
				t.Errorf("evaluations (-want +got):\n%s", diff)
			}
			if tt.wantHistory != nil {
				var got []entry
				for _, e := range state.Status.History {
					got = append(got, entry{e.Sequence, e.Time.Sub(serviceT0), e.StatusCode, e.Cause})
				}
				if diff := cmp.Diff(tt.wantHistory, got); diff != "" {
					t.Errorf("status.history (-want +got):\n%s", diff)
				}
			}
			if code := state.Status.StatusCode; code != "" {
				body := map[string]string{"200": ServiceAvailableBody, "503": ServiceUnavailableBody}[code]
				if state.Status.Body != body || state.Status.BodyTruncated {
					t.Errorf("status %s has body %q (truncated %t), want %q", code, state.Status.Body, state.Status.BodyTruncated, body)
				}
			}
		})
	}
}

// TestServiceStatusWaitWritesNothing: while the answer waits, the status
// ServiceStatus returns is the state's own (the manager writes nothing),
// and, spec unchanged, so is it when the count moves on its side.
func TestServiceStatusWaitWritesNothing(t *testing.T) {
	state := builders.ServiceState("ns", "flag", "web").MinReady(2).UnavailableAfter(10 * sec).AvailableAfter(30 * sec).Obj()
	state.Generation = 3
	at := serviceT0
	state.Status, _ = ServiceStatus(state, ServiceCount{Exists: true, Ready: 2}, at, at)
	tests := []struct {
		name  string
		count ServiceCount
		since time.Duration
		now   time.Duration
	}{
		{"below minReady, just now", ServiceCount{Exists: true, Ready: 1}, time.Minute, time.Minute},
		{"below minReady, a moment short", ServiceCount{Exists: true, Ready: 0}, time.Minute, time.Minute + 10*sec - time.Nanosecond},
		{"above minReady", ServiceCount{Exists: true, Ready: 7}, 0, time.Hour},
		{"at minReady again", ServiceCount{Exists: true, Ready: 2}, 0, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := ServiceStatus(state, tt.count, at.Add(tt.since), at.Add(tt.now))
			if !equality.Semantic.DeepEqual(state.Status, got) {
				t.Errorf("status changed (-want +got):\n%s", cmp.Diff(state.Status, got))
			}
		})
	}
}
