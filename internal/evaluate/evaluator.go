// Package evaluate evaluates switches' expected expressions away from the
// switch workers, in the namespaces' turns of the manager's evaluation
// slots (internal/fairshare), once per expression and response whoever
// asks (docs/behaviour.md, "Fair shares").
package evaluate

import (
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// VerdictRecheck is how long a switch waiting for its expression's verdict
// waits at most before it is reconciled again; it is enqueued as soon as
// the verdict is known, so this only bounds a lost wake-up.
const VerdictRecheck = time.Minute

// Evaluator evaluates switches' expected expressions away from
// the switch workers, in the turns of the manager's evaluation slots that
// it shares with body expressions (fairshare.Turns), each evaluation
// charged to the namespace of the switch that asked for it: a namespace
// whose switches hold thousands of slow, distinct expressions waits for
// its own evaluations, and the workers go on with other namespaces'
// switches (docs/behaviour.md, "Fair shares"). A verdict is evaluated once
// per expression and response, whoever asks: when switches of several
// namespaces wait for the same verdict (one expression on a cluster
// state's answer), each namespace asks for a turn of its own and the first
// turn given evaluates it for all, so that it never waits in the queue of
// whichever namespace asked first (nor in one account that any admitted
// namespace could fill).
type Evaluator struct {
	turns *fairshare.Turns
	// ctx ends the evaluations that wait for a turn when the manager
	// stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// jobs has, per verdict being evaluated (match.VerdictKey), the
	// switches to reconcile once it is known and the namespaces that ask
	// for a turn to evaluate it.
	jobs map[string]*verdictJob
	// last has each switch's last verdict, so that a verdict evicted from
	// the shared cache by thousands of others is not evaluated again for
	// a switch that already had it.
	last map[target.SwitchID]knownVerdict
	// waitsFor has the verdict key each waiting switch waits for: a switch
	// whose state answered anew waits for the new one only, and an
	// evaluation no switch waits for any more is dropped.
	waitsFor map[target.SwitchID]string
	// entries has the entry names each switch with a list asked verdicts
	// for, to forget them with the switch.
	entries map[target.SwitchID][]string
}

// knownVerdict is a verdict and the digest of the key of what it is the
// verdict of (a key holds the expression, which can be long).
type knownVerdict struct {
	key     [sha256.Size]byte
	verdict string
}

// verdictJob is one verdict to evaluate: the switches that wait for it,
// the namespaces that asked for a turn for it, and whether a turn was
// given (the evaluation is under way).
type verdictJob struct {
	switches map[target.SwitchID]func()
	accounts map[string]bool
	claimed  bool
}

// NewEvaluator returns an evaluator that takes its evaluations' turns
// from turns; it evaluates nothing until it is started.
func NewEvaluator(turns *fairshare.Turns) *Evaluator {
	ctx, cancel := context.WithCancel(context.Background())
	return &Evaluator{turns: turns, ctx: ctx, cancel: cancel,
		jobs: map[string]*verdictJob{}, last: map[target.SwitchID]knownVerdict{}, waitsFor: map[target.SwitchID]string{}, entries: map[target.SwitchID][]string{}}
}

// Start ends the evaluations still waiting for a turn when ctx is done. It
// implements manager.Runnable.
func (e *Evaluator) Start(ctx context.Context) error {
	<-ctx.Done()
	e.cancel()
	return nil
}

// NeedLeaderElection is false: the evaluator only waits for the manager
// to stop.
func (e *Evaluator) NeedLeaderElection() bool { return false }

// Known returns the verdicts the switch id can decide from now: the ones
// kept (the shared cache, or its own last one). A verdict that is not
// kept is evaluated in a turn of the switch's namespace, or of another
// namespace that waits for it too, whichever comes first, and the switch
// is reconciled again (wake) once it is Known.
func (e *Evaluator) Known(id target.SwitchID, wake func()) match.KnownVerdicts {
	account := id.Key.Namespace
	if id.Entry != "" {
		e.noteEntry(id)
	}
	return func(expr string, got match.Response) (string, bool) {
		key := match.VerdictKey(expr, got)
		e.mu.Lock()
		last, ok := e.last[id]
		e.mu.Unlock()
		if ok && last.key == sha256.Sum256([]byte(key)) {
			return last.verdict, true
		}
		if v, ok := match.CachedVerdict(expr, got); ok {
			e.remember(id, key, v)
			return v, true
		}
		e.submit(id, account, key, expr, got, wake)
		return "", false
	}
}

// remember keeps v as the switch's last verdict.
func (e *Evaluator) remember(id target.SwitchID, key, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last[id] = knownVerdict{key: sha256.Sum256([]byte(key)), verdict: v}
}

// noteEntry records that the switch of id has the entry id.entry.
func (e *Evaluator) noteEntry(id target.SwitchID) {
	base := target.SwitchID{Kind: id.Kind, Key: id.Key}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.entries[base], id.Entry) {
		e.entries[base] = append(e.entries[base], id.Entry)
	}
}

// Forget drops what is kept for a switch that is gone, and for each of
// its entries.
func (e *Evaluator) Forget(id target.SwitchID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, id)
	e.stopWaitingLocked(id)
	for _, name := range e.entries[id] {
		entry := id
		entry.Entry = name
		delete(e.last, entry)
		e.stopWaitingLocked(entry)
	}
	delete(e.entries, id)
}

// stopWaitingLocked takes id off the switches that wait for a verdict.
func (e *Evaluator) stopWaitingLocked(id target.SwitchID) {
	if key, ok := e.waitsFor[id]; ok {
		if job := e.jobs[key]; job != nil {
			delete(job.switches, id)
		}
		delete(e.waitsFor, id)
	}
}

// submit has the verdict key of expr on got evaluated, unless it is being
// evaluated already, and wake called for id once it is known; account, the
// switch's namespace, asks for a turn for it unless it has already.
func (e *Evaluator) submit(id target.SwitchID, account, key, expr string, got match.Response, wake func()) {
	e.mu.Lock()
	if e.waitsFor[id] != key {
		e.stopWaitingLocked(id)
	}
	job, ok := e.jobs[key]
	if !ok {
		job = &verdictJob{switches: map[target.SwitchID]func(){}, accounts: map[string]bool{}}
		e.jobs[key] = job
	}
	job.switches[id] = wake
	e.waitsFor[id] = key
	ask := !job.claimed && !job.accounts[account]
	job.accounts[account] = true
	e.mu.Unlock()
	if ask {
		go e.evaluate(account, key, expr, got)
	}
}

// claim takes the job of the verdict key for the turn of account that
// came: true when it is the first turn given for it and a switch still
// waits for it. A turn that comes later, or for a job nobody waits for any
// more, evaluates nothing (the job goes once no turn is asked any more).
func (e *Evaluator) claim(account, key string) (*verdictJob, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	job := e.jobs[key]
	if job == nil {
		return nil, false
	}
	if job.claimed || len(job.switches) == 0 {
		delete(job.accounts, account)
		if !job.claimed && len(job.accounts) == 0 {
			delete(e.jobs, key)
		}
		return nil, false
	}
	job.claimed = true
	return job, true
}

// evaluate waits for a turn of account, then, unless another namespace's
// turn evaluated the verdict first, evaluates expr on got, keeps the
// verdict for every switch that waits for it and wakes them.
func (e *Evaluator) evaluate(account, key, expr string, got match.Response) {
	turn, err := e.turns.Acquire(e.ctx, account)
	if err != nil {
		return
	}
	job, ok := e.claim(account, key)
	if !ok {
		turn.Done()
		return
	}
	verdict := match.EvaluateVerdict(expr, got)
	turn.Done()
	e.mu.Lock()
	if e.jobs[key] == job {
		delete(e.jobs, key)
	}
	digest := sha256.Sum256([]byte(key))
	for id := range job.switches {
		delete(e.waitsFor, id)
		e.last[id] = knownVerdict{key: digest, verdict: verdict}
	}
	e.mu.Unlock()
	for _, wake := range job.switches {
		wake()
	}
}
