package served

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// TestServedCondition: what a status shows of spec.served, and when a
// check is needed without a target write: a manager that starts checks
// once a switch whose Served is not True for its current mode, and never
// one that is served; a change of spec.served alone needs a check whether
// the last check is decided or still in progress.
func TestServedCondition(t *testing.T) {
	withStatus := func(status metav1.ConditionStatus, mode v1beta1.Mode, url string) *v1beta1.DynamicIngress {
		di := builders.DynamicIngress("shop", "web").State("flag").ExpectCode("503").Obj()
		di.Spec.Served = &v1beta1.ServedCheck{URL: url, Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
		di.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionServed, Status: status, Reason: "x"}}
		di.Status.Served = &v1beta1.ServedStatus{Mode: mode, Since: metav1.Now(), After: "1.00s"}
		return di
	}
	const url, other = "http://127.0.0.1:1/", "http://127.0.0.1:1/other"
	key := func(u string) string {
		return servedSpecKey(withStatus(metav1.ConditionTrue, v1beta1.ModePassive, u).Spec.Served)
	}
	served := Result{spec: key(url), Active: false, Served: true, at: time.Now(), After: time.Second}
	for _, tc := range []struct {
		name        string
		di          *v1beta1.DynamicIngress
		active      bool
		snap        Snapshot
		wantRecheck bool
		wantReason  string
	}{
		{"served for its mode, after a start", withStatus(metav1.ConditionTrue, v1beta1.ModePassive, url), false, Snapshot{}, false, "x"},
		{"served for the other mode, after a start", withStatus(metav1.ConditionTrue, v1beta1.ModePassive, url), true, Snapshot{}, true, ""},
		{"not served, after a start", withStatus(metav1.ConditionFalse, v1beta1.ModePassive, url), false, Snapshot{}, true, ""},
		{"not served, resumed once already", withStatus(metav1.ConditionFalse, v1beta1.ModePassive, url), false, Snapshot{resumed: true}, false, "x"},
		{"checking when the last manager stopped", withStatus(metav1.ConditionUnknown, v1beta1.ModePassive, url), false, Snapshot{}, true, ""},
		{"checking", withStatus(metav1.ConditionUnknown, v1beta1.ModePassive, url), false,
			Snapshot{checking: true, active: false, spec: key(url)}, false, v1beta1.ReasonChecking},
		{"decided served", withStatus(metav1.ConditionUnknown, v1beta1.ModePassive, url), false,
			Snapshot{decided: true, result: served}, false, v1beta1.ReasonServed},
		{"decided served, then spec.served changed", withStatus(metav1.ConditionTrue, v1beta1.ModePassive, other), false,
			Snapshot{decided: true, result: served, resumed: true}, true, ""},
		{"checking, then spec.served changed", withStatus(metav1.ConditionUnknown, v1beta1.ModePassive, other), false,
			Snapshot{checking: true, active: false, spec: key(url), resumed: true}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, recheck := Condition(tc.di, tc.active, tc.snap, nil, time.Now())
			if recheck != tc.wantRecheck {
				t.Errorf("recheck = %v, want %v", recheck, tc.wantRecheck)
			}
			reason := ""
			if v.Cond != nil {
				reason = v.Cond.Reason
			}
			if !recheck && reason != tc.wantReason {
				t.Errorf("Served reason = %q, want %q", reason, tc.wantReason)
			}
		})
	}
}

// TestAnAnswerFromBeforeTheCheckNeverCounts: an answer to a request that
// began before a check started (before the write it checks) decides
// nothing, even when it has the shape the check waits for; one that began
// after it does.
func TestAnAnswerFromBeforeTheCheckNeverCounts(t *testing.T) {
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: "web"}}
	spec := &v1beta1.ServedCheck{URL: "http://127.0.0.1:1/", Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
	g := &servedGroup{req: probe.Request{Tenant: "shop"}, checks: map[target.SwitchID]*servedCheck{}, nudge: make(chan struct{}, 1)}
	began := time.Now()
	// The group is running (its key is taken): start adds the check to it.
	_, key := servedRequest("shop", spec)
	s.mu.Lock()
	s.addGroupLocked(key, g)
	s.mu.Unlock()
	time.Sleep(time.Millisecond)
	s.Check(id, spec, false, time.Now(), func(Result) {})
	if got := s.decide(g, began, probe.Response{StatusCode: "200"}, nil, time.Now()); len(got) != 0 {
		t.Errorf("an answer to a request that began before the check decided it: %+v", got[0].result)
	}
	if got := s.decide(g, time.Now(), probe.Response{StatusCode: "200"}, nil, time.Now()); len(got) != 1 || !got[0].result.Served {
		t.Errorf("an answer to a request that began after the check: %+v, want it served", got)
	}
}

// TestServedOffset: a group's second request comes a share of its period
// after its first that its key decides, from a quarter of the period to
// all of it, and many keys spread over that.
func TestServedOffset(t *testing.T) {
	const period = time.Second
	if a, b := servedOffset("http://a.example/", period), servedOffset("http://a.example/", period); a != b {
		t.Errorf("the same key waits %s and %s", a, b)
	}
	var tenths [10]int
	for i := range 1000 {
		off := servedOffset(fmt.Sprintf("http://host-%d.example/\n1s", i), period)
		if off < period/4 || off >= period {
			t.Fatalf("offset %s outside [%s, %s)", off, period/4, period)
		}
		tenths[(off-period/4)*10/(period*3/4)]++
	}
	for i, n := range tenths {
		if n < 50 || n > 150 {
			t.Errorf("%d of 1000 keys in tenth %d of the offsets' range, want about 100: %v", n, i, tenths)
		}
	}
}

// TestNudgeDue: a check requests at once when another of its namespace saw
// its new shape in a request that began after this check's last, and at
// most twice a period.
func TestNudgeDue(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	const period = time.Second
	for _, tc := range []struct {
		name       string
		last, seen time.Time
		want       bool
	}{
		{"never requested", time.Time{}, now.Add(-time.Millisecond), true},
		{"requested before, a period ago", now.Add(-period), now.Add(-time.Millisecond), true},
		{"requested before, half a period ago", now.Add(-period / 2), now.Add(-time.Millisecond), true},
		{"requested before, less than half a period ago", now.Add(-period/2 + time.Millisecond), now.Add(-time.Millisecond), false},
		{"requested after the request that saw it", now.Add(-time.Millisecond), now.Add(-2 * time.Millisecond), false},
		{"requested with it", now.Add(-period), now.Add(-period), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nudgeDue(tc.last, tc.seen, period, now); got != tc.want {
				t.Errorf("nudgeDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNudgeOthers: an answer that shows a check its new shape has at most
// maxNudged other groups of its namespace request at once, those that
// requested longest ago first (one that never did before all), none with
// no check left and none of another namespace.
func TestNudgeOthers(t *testing.T) {
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	now := time.Now()
	group := func(ns string, began time.Time) *servedGroup {
		g := &servedGroup{req: probe.Request{Tenant: ns}, checks: map[target.SwitchID]*servedCheck{}, period: time.Second, nudge: make(chan struct{}, 1)}
		id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("web-%d", len(s.groups))}}
		g.checks[id] = &servedCheck{id: id}
		s.addGroupLocked(id.Key.String(), g)
		if !began.IsZero() {
			// Requests begin in the order of their times, as in run.
			s.beganLocked(g, began)
		}
		return g
	}
	other := group("blog", time.Time{})
	// Its check was decided: it stops at its next turn.
	decided := group("shop", now.Add(-20*time.Second))
	clear(decided.checks)
	// The first ones requested longest ago.
	shop := make([]*servedGroup, maxNudged+4)
	for i := range shop {
		shop[i] = group("shop", now.Add(-10*time.Second+time.Duration(i)*time.Millisecond))
	}
	recent := group("shop", now.Add(-100*time.Millisecond))
	from := group("shop", now.Add(-time.Millisecond))
	// Added last, but it never requested: it waited longest of all.
	fresh := group("shop", time.Time{})
	took := func() map[*servedGroup]bool {
		got := map[*servedGroup]bool{}
		for _, g := range append([]*servedGroup{other, decided, recent, from, fresh}, shop...) {
			select {
			case <-g.nudge:
				got[g] = true
			default:
			}
		}
		return got
	}
	s.nudgeOthers(from, now.Add(-time.Millisecond))
	got := took()
	if !got[fresh] {
		t.Errorf("a group that never requested was not nudged")
	}
	for i, g := range shop {
		if want := i < maxNudged-1; got[g] != want {
			t.Errorf("group %d (last request %s ago) nudged = %v, want %v", i, 10*time.Second-time.Duration(i)*time.Millisecond, got[g], want)
		}
	}
	if got[from] || got[recent] || got[other] || got[decided] {
		t.Errorf("nudged: the answering group %v, one that requested 100ms ago %v, another namespace's %v, one with no check left %v; want none",
			got[from], got[recent], got[other], got[decided])
	}

	// A second answer nudges the next ones: those nudged first count as
	// having just requested.
	s.nudgeOthers(shop[0], now)
	got = took()
	for i, g := range shop {
		if want := i >= maxNudged-1; got[g] != want {
			t.Errorf("second answer: group %d nudged = %v, want %v", i, got[g], want)
		}
	}
	if got[fresh] || got[recent] || got[decided] {
		t.Errorf("second answer nudged: the one that never requested (nudged first) %v, one that requested 100ms ago %v, one with no check left %v; want none",
			got[fresh], got[recent], got[decided])
	}
}

// TestGroupsInTheOrderOfTheirRequests: as a namespace's groups request,
// they stand in the order their last requests began (nudgeOthers walks
// them from the front), and a group whose checks are all decided leaves
// the order at once.
func TestGroupsInTheOrderOfTheirRequests(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	check := func(name string, active bool, period time.Duration) {
		id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: name}}
		// Each its own URL, so its own group; the server answers 200,
		// the passive shape.
		spec := &v1beta1.ServedCheck{URL: srv.URL + "/" + name, Period: &metav1.Duration{Duration: period},
			Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
		s.Check(id, spec, active, time.Now(), func(Result) {})
	}
	// Checks of the active shape are never served here: they keep
	// requesting, every 20ms.
	for _, name := range []string{"a", "b", "c", "d"} {
		check(name, true, 20*time.Millisecond)
	}
	ordered := func() (bool, int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		l := s.inNamespace["shop"]
		if l == nil {
			return true, 0
		}
		var last time.Time
		for e := l.Front(); e != nil; e = e.Next() {
			g := e.Value.(*servedGroup)
			if g.began.Before(last) {
				return false, l.Len()
			}
			last = g.began
		}
		return true, l.Len()
	}
	for requests.Load() < 40 {
		if ok, _ := ordered(); !ok {
			t.Fatalf("the namespace's groups are not in the order of their last requests after %d requests", requests.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// A check of the passive shape is served at its first answer: its
	// group leaves the order then, not a period (a minute) later.
	check("e", false, time.Minute)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, n := ordered()
		if !ok {
			t.Fatalf("the namespace's groups are not in the order of their last requests")
		}
		if n == 4 && !s.Snapshot(target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: "e"}}).checking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d groups in the namespace's order 5s after the passive check began, want the 4 still checking", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkNudgeOthers measures the nudges of one flip's answers: every
// group of one namespace sees its new shape in turn, each answer nudging
// the ones that waited longest (n groups, the others' last requests spread
// over the last period).
func BenchmarkNudgeOthers(b *testing.B) {
	for _, n := range []int{50, 500, 2000} {
		b.Run(fmt.Sprintf("%d groups", n), func(b *testing.B) {
			s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
			b.Cleanup(s.cancel)
			var groups []*servedGroup
			for i := range n {
				id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}}
				g := &servedGroup{req: probe.Request{Tenant: "shop"}, checks: map[target.SwitchID]*servedCheck{id: {id: id}}, period: time.Second, nudge: make(chan struct{}, 1)}
				s.addGroupLocked(id.Key.String(), g)
				groups = append(groups, g)
			}
			for b.Loop() {
				now := time.Now()
				for i, g := range groups {
					s.beganLocked(g, now.Add(-time.Second+time.Duration(i)*time.Second/time.Duration(n)))
				}
				for _, g := range groups {
					s.nudgeOthers(g, now)
				}
				for _, g := range groups {
					select {
					case <-g.nudge:
					default:
					}
				}
			}
		})
	}
}
