package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/fairshare"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/match"
)

// verdictRecheck is how long a switch waiting for its expression's verdict
// waits at most before it is reconciled again; it is enqueued as soon as
// the verdict is known, so this only bounds a lost wake-up.
const verdictRecheck = time.Minute

// expressionEvaluator evaluates switches' expected expressions away from
// the switch workers, in the turns of the manager's evaluation slots that
// it shares with body expressions (fairshare.Turns), each evaluation
// charged to the namespace of the switch that asked for it: a namespace
// whose switches hold thousands of slow, distinct expressions waits for
// its own evaluations, and the workers go on with other namespaces'
// switches (docs/behaviour.md, "Fair shares"). A verdict is evaluated once
// per expression and response, whoever asks, as before.
type expressionEvaluator struct {
	turns *fairshare.Turns
	// ctx ends the evaluations that wait for a turn when the manager
	// stops.
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// waiting has, per verdict being evaluated (match.VerdictKey), the
	// switches to reconcile once it is known.
	waiting map[string]map[switchID]func()
	// last has each switch's last verdict, so that a verdict evicted from
	// the shared cache by thousands of others is not evaluated again for
	// a switch that already had it.
	last map[switchID]knownVerdict
	// waitsFor has the verdict key each waiting switch waits for: a switch
	// whose state answered anew waits for the new one only, and an
	// evaluation no switch waits for any more is dropped.
	waitsFor map[switchID]string
	// entries has the entry names each switch with a list asked verdicts
	// for, to forget them with the switch.
	entries map[switchID][]string
}

// switchID names a switch, its kind and key, or one entry of its
// spec.anyOf / spec.allOf (entry, empty for a single state).
type switchID struct {
	kind  string
	key   types.NamespacedName
	entry string
}

// knownVerdict is a verdict and the digest of the key of what it is the
// verdict of (a key holds the expression, which can be long).
type knownVerdict struct {
	key     [sha256.Size]byte
	verdict string
}

func newExpressionEvaluator(turns *fairshare.Turns) *expressionEvaluator {
	ctx, cancel := context.WithCancel(context.Background())
	return &expressionEvaluator{turns: turns, ctx: ctx, cancel: cancel,
		waiting: map[string]map[switchID]func(){}, last: map[switchID]knownVerdict{}, waitsFor: map[switchID]string{}, entries: map[switchID][]string{}}
}

// Start ends the evaluations still waiting for a turn when ctx is done. It
// implements manager.Runnable.
func (e *expressionEvaluator) Start(ctx context.Context) error {
	<-ctx.Done()
	e.cancel()
	return nil
}

// NeedLeaderElection is false: the evaluator only waits for the manager
// to stop.
func (e *expressionEvaluator) NeedLeaderElection() bool { return false }

// known returns the verdicts the switch id can decide from now: the ones
// kept (the shared cache, or its own last one). A verdict that is not
// kept is evaluated in a turn of the state's account (verdictAccount), and
// the switch is reconciled again (wake) once it is known.
func (e *expressionEvaluator) known(id switchID, state v1beta1.StateReference, wake func()) match.KnownVerdicts {
	account := verdictAccount(id.key.Namespace, state)
	if id.entry != "" {
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

// verdictAccount is whose evaluation turns a verdict on the answer of
// state, followed by a switch of namespace, is evaluated in: the state's
// namespace for a DynamicIngressState (only its namespace's switches
// follow it); for a ClusterDynamicIngressState, whose answer switches of
// many namespaces share a verdict on, the platform's account (""), as its
// probes are. Never the queue of whichever namespace asked first: a
// namespace's slow expressions must not delay another's verdict on the
// platform's kill switch.
func verdictAccount(namespace string, state v1beta1.StateReference) string {
	if state.IsCluster() {
		return ""
	}
	return namespace
}

// remember keeps v as the switch's last verdict.
func (e *expressionEvaluator) remember(id switchID, key, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last[id] = knownVerdict{key: sha256.Sum256([]byte(key)), verdict: v}
}

// noteEntry records that the switch of id has the entry id.entry.
func (e *expressionEvaluator) noteEntry(id switchID) {
	base := switchID{kind: id.kind, key: id.key}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.entries[base], id.entry) {
		e.entries[base] = append(e.entries[base], id.entry)
	}
}

// forget drops what is kept for a switch that is gone, and for each of
// its entries.
func (e *expressionEvaluator) forget(id switchID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.last, id)
	e.stopWaitingLocked(id)
	for _, name := range e.entries[id] {
		entry := id
		entry.entry = name
		delete(e.last, entry)
		e.stopWaitingLocked(entry)
	}
	delete(e.entries, id)
}

// stopWaitingLocked takes id off the switches that wait for a verdict.
func (e *expressionEvaluator) stopWaitingLocked(id switchID) {
	if key, ok := e.waitsFor[id]; ok {
		delete(e.waiting[key], id)
		delete(e.waitsFor, id)
	}
}

// submit has the verdict key of expr on got evaluated in a turn of
// account, unless it is being evaluated already, and wake called for id
// once it is known.
func (e *expressionEvaluator) submit(id switchID, account, key, expr string, got match.Response, wake func()) {
	e.mu.Lock()
	if e.waitsFor[id] != key {
		e.stopWaitingLocked(id)
	}
	switches, running := e.waiting[key]
	if !running {
		switches = map[switchID]func(){}
		e.waiting[key] = switches
	}
	switches[id] = wake
	e.waitsFor[id] = key
	e.mu.Unlock()
	if !running {
		go e.evaluate(account, key, expr, got)
	}
}

// errNobodyWaits is why an evaluation is dropped when its turn comes.
var errNobodyWaits = errors.New("no switch waits for the verdict")

// anyWaiting says whether a switch still waits for the verdict key.
func (e *expressionEvaluator) anyWaiting(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.waiting[key]) > 0
}

// evaluate evaluates expr on got in a turn of account, then keeps the
// verdict for every switch that waits for it and wakes them.
func (e *expressionEvaluator) evaluate(account, key, expr string, got match.Response) {
	turn, err := e.turns.Acquire(e.ctx, account)
	var verdict string
	if err == nil {
		if e.anyWaiting(key) {
			verdict = match.EvaluateVerdict(expr, got)
		} else {
			// Every switch that asked for it is gone.
			err = errNobodyWaits
		}
		turn.Done()
	}
	e.mu.Lock()
	switches := e.waiting[key]
	delete(e.waiting, key)
	for id := range switches {
		delete(e.waitsFor, id)
	}
	if err == nil {
		digest := sha256.Sum256([]byte(key))
		for id := range switches {
			e.last[id] = knownVerdict{key: digest, verdict: verdict}
		}
	}
	e.mu.Unlock()
	if err != nil {
		return
	}
	for _, wake := range switches {
		wake()
	}
}
