package served

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	g := &servedGroup{checks: map[target.SwitchID]*servedCheck{}, nudge: make(chan struct{}, 1)}
	began := time.Now()
	// The group is running (its key is taken): start adds the check to it.
	_, key := servedRequest("shop", spec)
	s.mu.Lock()
	s.groups[key] = g
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

// TestStatusHold: a status waits for its check a period after the check
// was free to request, and at least 3 s, the time a proxy such as Traefik
// may take to serve a flip's writes.
func TestStatusHold(t *testing.T) {
	for _, tc := range []struct {
		period, want time.Duration
	}{
		{250 * time.Millisecond, 3 * time.Second},
		{time.Second, 3 * time.Second},
		{3 * time.Second, 3 * time.Second},
		{10 * time.Second, 10 * time.Second},
	} {
		if got := statusHold(tc.period); got != tc.want {
			t.Errorf("statusHold(%s) = %s, want %s", tc.period, got, tc.want)
		}
	}
}

// TestSettleDelay: the first served result of a namespace opens a settle
// window and waits it out, as do those decided within it; those decided
// after it go at once while they keep coming; one after a pause of
// settleQuiet (another reload) opens a new window.
func TestSettleDelay(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	open := settleWindow{end: at(reloadSettle), last: t0}
	for _, tc := range []struct {
		name      string
		w         settleWindow
		now       time.Time
		wantDelay time.Duration
		want      settleWindow
	}{
		{"the namespace's first", settleWindow{}, t0, reloadSettle, open},
		{"within the window", open, at(100 * time.Millisecond), reloadSettle - 100*time.Millisecond,
			settleWindow{end: open.end, last: at(100 * time.Millisecond)}},
		{"at the window's end", open, open.end, 0, settleWindow{end: open.end, last: open.end}},
		{"after the window, the last one just before", settleWindow{end: open.end, last: at(250 * time.Millisecond)},
			at(250*time.Millisecond + settleQuiet - time.Millisecond), 0,
			settleWindow{end: open.end, last: at(250*time.Millisecond + settleQuiet - time.Millisecond)}},
		{"after a pause: another reload", open, at(settleQuiet), reloadSettle,
			settleWindow{end: at(settleQuiet + reloadSettle), last: at(settleQuiet)}},
		{"two seconds on: Traefik's next reload", open, at(2 * time.Second), reloadSettle,
			settleWindow{end: at(2*time.Second + reloadSettle), last: at(2 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delay, got := settleDelay(tc.w, tc.now)
			if delay != tc.wantDelay {
				t.Errorf("settleDelay waits %s, want %s", delay, tc.wantDelay)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(settleWindow{})); diff != "" {
				t.Errorf("settleDelay's window (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServedResultsWaitOutTheReloadSettle: the served results of a
// namespace's first answer reach their switches (done) reloadSettle after
// they were decided, not at once, and until then their statuses wait too
// (Holding), however else the switches are reconciled.
func TestServedResultsWaitOutTheReloadSettle(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	spec := &v1beta1.ServedCheck{URL: srv.URL, Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
	type delivered struct {
		id     target.SwitchID
		result Result
		at     time.Time
	}
	got := make(chan delivered, 2)
	var ids []target.SwitchID
	for _, name := range []string{"web", "api"} { // one URL: decided on one answer
		id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: name}}
		ids = append(ids, id)
		s.Check(id, spec, true, time.Now(), func(r Result) { got <- delivered{id: id, result: r, at: time.Now()} })
	}

	// Decided, not yet delivered: the statuses wait.
	web := ids[0]
	for deadline := time.Now().Add(10 * time.Second); !s.Snapshot(web).decided; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not decided within 10s")
		}
	}
	held, other := s.Holding(web, true, time.Now()), s.Holding(web, false, time.Now())
	if len(got) == 0 { // else delivered already: Holding said nothing of the window
		if held <= 0 || held > reloadSettle {
			t.Errorf("Holding of a served result within its settle window = %v, want the window's rest (at most %v)", held, reloadSettle)
		}
	} else {
		t.Log("delivered before Holding was asked (a loaded machine): the hold is not judged")
	}
	if other != 0 {
		t.Errorf("Holding for the other mode = %v, want 0", other)
	}

	for range ids {
		select {
		case d := <-got:
			if !d.result.Served {
				t.Fatalf("%s: decided %+v, want served", d.id.Key.Name, d.result)
			}
			if waited := d.at.Sub(d.result.at); waited < reloadSettle {
				t.Errorf("%s: its served result reached its switch %v after it was decided, want at least %v", d.id.Key.Name, waited, reloadSettle)
			}
			if held := s.Holding(d.id, true, time.Now()); held != 0 {
				t.Errorf("%s: Holding once its result was delivered = %v, want 0", d.id.Key.Name, held)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not delivered within 10s")
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
// maxNudged other groups of its namespaces request at once, those that
// requested longest ago first, and none of another namespace.
func TestNudgeOthers(t *testing.T) {
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	now := time.Now()
	group := func(ns string, began time.Time) *servedGroup {
		g := &servedGroup{checks: map[target.SwitchID]*servedCheck{}, period: time.Second, began: began, nudge: make(chan struct{}, 1)}
		id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("web-%d", len(s.groups))}}
		g.checks[id] = &servedCheck{id: id}
		s.groups[id.Key.String()] = g
		return g
	}
	from := group("shop", now.Add(-time.Millisecond))
	var shop []*servedGroup
	for i := range maxNudged + 4 {
		// The first ones requested longest ago.
		shop = append(shop, group("shop", now.Add(-10*time.Second+time.Duration(i)*time.Millisecond)))
	}
	recent := group("shop", now.Add(-100*time.Millisecond))
	other := group("blog", time.Time{})
	s.nudgeOthers(from, []string{"shop"}, now.Add(-time.Millisecond))
	nudged := func(g *servedGroup) bool {
		select {
		case <-g.nudge:
			return true
		default:
			return false
		}
	}
	for i, g := range shop {
		if got, want := nudged(g), i < maxNudged; got != want {
			t.Errorf("group %d (last request %s ago) nudged = %v, want %v", i, now.Sub(g.began), got, want)
		}
	}
	if nudged(from) || nudged(recent) || nudged(other) {
		t.Errorf("nudged: the answering group %v, one that requested 100ms ago %v, another namespace's %v; want none", nudged(from), nudged(recent), nudged(other))
	}
}

// BenchmarkNudgeOthers measures the nudges of one flip's answers: every
// group of one namespace sees its new shape in turn, each answer nudging
// the ones that waited longest (n groups, the others' last requests spread
// over the period before it). Each answer walks every group of the
// manager: the cost of a flip grows with the square of its checks
// (docs/benchmarks.md, "What the nudges cost").
func BenchmarkNudgeOthers(b *testing.B) {
	for _, n := range []int{50, 500, 2000} {
		b.Run(fmt.Sprintf("%d groups", n), func(b *testing.B) {
			s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
			b.Cleanup(s.cancel)
			var groups []*servedGroup
			for i := range n {
				id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("web-%d", i)}}
				g := &servedGroup{req: probe.Request{Tenant: "shop"}, checks: map[target.SwitchID]*servedCheck{id: {id: id}}, period: time.Second, nudge: make(chan struct{}, 1)}
				s.groups[id.Key.String()] = g
				groups = append(groups, g)
			}
			for b.Loop() {
				now := time.Now()
				for i, g := range groups {
					g.began = now.Add(-time.Second + time.Duration(i)*time.Second/time.Duration(n))
				}
				for _, g := range groups {
					s.nudgeOthers(g, []string{"shop"}, now)
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

// TestChecksWaitForTheFlipsWritesAndStartWhenTold: a check of a namespace
// whose flip still has targets to write sends nothing; told that a flip's
// last target is written (TargetsWritten), it requests at once, not at its
// next look (flipWritesPoll).
func TestChecksWaitForTheFlipsWritesAndStartWhenTold(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	s := NewChecks(probe.NewProber(probe.Guard{}, 1024), nil)
	t.Cleanup(s.cancel)
	var busy atomic.Bool
	busy.Store(true)
	s.Busy = func(namespace string) bool { return namespace == "shop" && busy.Load() }
	id := target.SwitchID{Kind: "DynamicIngress", Key: types.NamespacedName{Namespace: "shop", Name: "web"}}
	spec := &v1beta1.ServedCheck{URL: srv.URL, Active: v1beta1.ExpectedResponse{StatusCode: "503"}, Passive: v1beta1.ExpectedResponse{StatusCode: "200"}}
	decided := make(chan Result, 1)
	s.Check(id, spec, true, time.Now(), func(r Result) { decided <- r })

	time.Sleep(200 * time.Millisecond)
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests while the namespace's flip still had targets to write, want none", n)
	}
	s.TargetsWritten("other") // another namespace's flip: shop's check waits on
	time.Sleep(100 * time.Millisecond)
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests after another namespace's flip wrote its targets, want none", n)
	}
	busy.Store(false)
	told := time.Now()
	s.TargetsWritten("shop")
	s.TargetsWritten("shop") // told twice: nothing waits any more
	select {
	case r := <-decided:
		if !r.Served {
			t.Fatalf("decided %+v, want served", r)
		}
		if waited := r.at.Sub(told); waited >= flipWritesPoll/2 {
			t.Errorf("decided served %v after the flip's last target was written, want well under the look of every %v", waited, flipWritesPoll)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not decided within 10s")
	}
}
