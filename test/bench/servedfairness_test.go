package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"k8s.io/utils/ptr"

	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// The served checks' fair share (part of the served measure): the first
// N's operator flips through Traefik are flipped again while another
// namespace holds servedStalling switches whose served URLs (each its
// own, on a loopback server) stall and never answer as their shape. The flips beside them are held
// to 1.1x the same flips alone, measured just before in the same run, and
// the stalling namespace to at most 8 requests in flight at once.

// besideStallingWho names the operator's flips beside the stalling checks.
const besideStallingWho = "operator beside stalling checks"

// servedFairnessBar is how much slower a served flip may be beside
// another namespace's stalling checks than alone.
const servedFairnessBar = 1.1

// maxStallingInFlight is what the stalling namespace may hold in flight.
const maxStallingInFlight = 8

// stallingServer holds every request 900 ms, within the checks' request
// timeout (1 s by default), answers 404, and counts how many it holds at
// most: its handler ends before the manager has the answer, so the count
// is never above the manager's own.
type stallingServer struct {
	*httptest.Server
	held suite.InFlight
}

func newStallingServer() *stallingServer {
	s := &stallingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer s.held.Enter()()
		select {
		case <-time.After(900 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	return s
}

// besideStalling flips the served namespace op again, servedReps times
// each way, beside cfg.servedStalling switches of another namespace whose
// checks stall, and records the flips (besideStallingWho) and the most
// requests the stalling namespace held in flight.
func (sm *servedMeasure) besideStalling(ctx context.Context, op servedNamespace, m *managerProc, res *servedSuite) error {
	b, h := sm.b, sm.b.h
	n := b.cfg.servedStalling
	stall := newStallingServer()
	defer stall.Close()
	ns := fmt.Sprintf("served-stalling-%d", n)
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	b.progress("served N=%d: %d switches of namespace %s whose served URLs stall 0.9 s and answer 404", op.n, n, ns)
	if err := h.c.Create(ctx, fixedState(ns, flipStateName, "503")); err != nil {
		return err
	}
	err := parallel(n, 32, func(i int) error {
		// Traefik serves no Ingress of another class: the stalling
		// namespace's targets leave its configuration as it was.
		shape := builders.IngressTo(servedHost(ns, i), servedOpenService)
		shape.Template.Spec.IngressClassName = ptr.To("not-traefik")
		di := builders.DynamicIngress(ns, objName(i)).State(flipStateName).ExpectCode("200").Passive(shape).Active(shape).
			Served(builders.Served(fmt.Sprintf("%s/%d", stall.URL, i), "503", "200").Timeout(30 * time.Minute)).Obj()
		return h.c.Create(ctx, di)
	})
	if err != nil {
		return fmt.Errorf("creating %d stalling DynamicIngresses: %w", n, err)
	}
	deadline := time.Now().Add(flipTimeout(n, 100*time.Millisecond))
	for stall.held.Peak() < maxStallingInFlight {
		if time.Now().After(deadline) {
			return fmt.Errorf("the stalling namespace's checks hold %d requests in flight, want %d", stall.held.Peak(), maxStallingInFlight)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sm.profileSuffix = "-beside-stalling"
	defer func() { sm.profileSuffix = "" }()
	for rep := range b.cfg.servedReps {
		for _, active := range []bool{true, false} {
			run, err := sm.operatorFlip(ctx, op, active, m)
			if err != nil {
				return fmt.Errorf("beside the stalling checks: %w", err)
			}
			if stall.held.Now() == 0 {
				return fmt.Errorf("beside the stalling checks: none of their requests in flight after the flip %s: their checks ended", direction(active))
			}
			run.who = besideStallingWho
			res.runs = append(res.runs, run)
			b.progress("served N=%d round %d %s beside %d stalling checks: last host served %s (first %s); Ingresses written %s–%s; %d requests of theirs in flight at most",
				op.n, rep+1, direction(active), n, round(run.served), round(run.firstServed), round(run.firstWrite), round(run.lastWrite), stall.held.Peak())
		}
	}
	res.stalling, res.stallingMost = n, stall.held.Peak()
	return h.clearNamespace(ctx, ns)
}

// fairnessRows adds the flips beside the stalling checks against the same
// flips alone, and the stalling namespace's requests in flight.
func (s *servedSuite) fairnessRows(sum *table) {
	if s.stalling == 0 {
		return
	}
	for _, active := range []bool{true, false} {
		alone, beside := figuresOfServed(s.of("operator", active)), figuresOfServed(s.of(besideStallingWho, active))
		if alone.flips == 0 || beside.flips == 0 {
			continue
		}
		sum.add(fmt.Sprintf("served flip N=%d %s beside %d stalling served checks of another namespace: the last host served (median of %d)", s.n, direction(active), s.stalling, beside.flips),
			round(beside.served), fmt.Sprintf("the same flip alone, just before (median of %d); required within %.1fx", alone.flips, servedFairnessBar),
			round(alone.served), durRatio(beside.served, alone.served))
	}
	sum.add(fmt.Sprintf("served checks of the stalling namespace (%d URLs that stall 0.9 s and answer 404): requests in flight at once, max", s.stalling),
		fmt.Sprint(s.stallingMost), "required at most", fmt.Sprint(maxStallingInFlight), fmt.Sprintf("%.2fx", float64(s.stallingMost)/maxStallingInFlight))
}
