package served

import (
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/probe"
)

// How a served check is decided on an answer.

// decidedCheck is a check and its result.
type decidedCheck struct {
	check  *servedCheck
	result Result
}

// decide decides the group's checks on one answer (resp, or err) to a
// request that began at began, seen at now: a check whose mode's shape it
// is is served, unless the request began before the check did (it may
// have been answered from before the write the check is about); one past
// its deadline is not served. The matchers are evaluated without the
// checks' lock, which every switch's reconcile takes, and, when one has an
// expression, in a turn of the namespace (the evaluation time of
// docs/behaviour.md, "Fair shares").
func (s *Checks) decide(g *servedGroup, began time.Time, resp probe.Response, err error, now time.Time) []decidedCheck {
	answer := ""
	if err != nil {
		answer = err.Error()
	} else {
		answer = "HTTP " + resp.StatusCode
	}
	s.mu.Lock()
	checks := make([]*servedCheck, 0, len(g.checks))
	for _, c := range g.checks {
		checks = append(checks, c)
	}
	s.mu.Unlock()

	matched := map[*servedCheck]bool{}
	if err == nil {
		if !s.evaluate(g.req.Tenant, checks, began, match.Response{StatusCode: resp.StatusCode, Body: resp.Body}, matched) {
			return nil
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var out []decidedCheck
	for _, c := range checks {
		if s.pending[c.id] != c {
			// Replaced (a new write) or stopped while it was evaluated.
			continue
		}
		c.last = answer
		var result Result
		switch {
		case matched[c]:
			result = Result{spec: c.spec, Active: c.active, Served: true, at: now, After: now.Sub(c.written)}
		case now.After(c.deadline):
			result = Result{spec: c.spec, Active: c.active, at: now, After: now.Sub(c.written), Last: answer}
		default:
			continue
		}
		delete(g.checks, c.id)
		delete(s.pending, c.id)
		s.results[c.id] = result
		out = append(out, decidedCheck{check: c, result: result})
	}
	return out
}

// evaluate sets matched for each of checks, begun before the request that
// began at began, whose matcher got matches; in a turn of namespace when
// a matcher has an expression. false when the manager stopped first.
func (s *Checks) evaluate(namespace string, checks []*servedCheck, began time.Time, got match.Response, matched map[*servedCheck]bool) bool {
	var counted []*servedCheck
	expression := false
	for _, c := range checks {
		if began.Before(c.started) {
			continue
		}
		counted = append(counted, c)
		expression = expression || c.want.Expression != ""
	}
	if expression && s.turns != nil {
		turn, err := s.turns.Acquire(s.ctx, namespace)
		if err != nil {
			return false
		}
		defer turn.Done()
	}
	for _, c := range counted {
		matched[c] = match.Evaluate(c.want, got).Outcome == match.Matched
	}
	return true
}
