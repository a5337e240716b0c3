package controller

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// flipTracker follows each change of a state's response until every
// follower that this manager serves shows it in its status, and then has
// the state's history entry of the change carry the flip's summary
// (followers, completedAfter): one more write of the state per change,
// never one per follower (docs/behaviour.md, "History"). Both switch
// engines report to it.
type flipTracker struct {
	// engines is how many switch engines (kinds) report followers: a flip
	// is complete only once each has.
	engines int
	// notify has the state engine reconcile a state ("namespace/name",
	// "/name" for a cluster state).
	notify func(key string)
	now    func() time.Time

	mu    sync.Mutex
	flips map[string]*flip
	// completed has the summaries to write, by state key.
	completed map[string]flipDone
}

// flip is one change of a state's response reaching its followers.
type flip struct {
	code, body string
	started    time.Time
	kinds      map[string]bool
	remaining  map[target.SwitchID]struct{}
	followers  int
	namespaces map[string]struct{}
}

// flipDone is the summary of a complete flip.
type flipDone struct {
	code, body string
	summary    v1beta1.FlipSummary
}

func newFlipTracker(engines int, now func() time.Time) *flipTracker {
	return &flipTracker{engines: engines, now: now, flips: map[string]*flip{}, completed: map[string]flipDone{}}
}

// stateKey names a state as the state engine's queue does.
func stateKey(namespace, name string) string { return namespace + "/" + name }

// expect starts following the change of the state key to (code, body), or
// adds kind's followers to it: keys are the switches of kind that follow
// the state.
func (t *flipTracker) expect(key, code, body, kind string, keys []types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.flips[key]
	if !ok || f.code != code || f.body != body {
		f = &flip{code: code, body: body, started: t.now(), kinds: map[string]bool{}, remaining: map[target.SwitchID]struct{}{}, namespaces: map[string]struct{}{}}
		t.flips[key] = f
		delete(t.completed, key)
	}
	if f.kinds[kind] {
		return
	}
	f.kinds[kind] = true
	for _, k := range keys {
		f.remaining[target.SwitchID{Kind: kind, Key: k}] = struct{}{}
		f.namespaces[k.Namespace] = struct{}{}
	}
	f.followers += len(keys)
	t.completeLocked(key, f)
}

// settled reports that the status of the switch id shows what it decided
// from the state key answering (code, body).
func (t *flipTracker) settled(key, code, body string, id target.SwitchID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.flips[key]
	if !ok || f.code != code || f.body != body {
		return
	}
	delete(f.remaining, id)
	t.completeLocked(key, f)
}

// forgetIn drops the switch id from the flip of the state key: it follows
// the state no more (not found, not admitted), so it shows nothing of it.
func (t *flipTracker) forgetIn(key string, id target.SwitchID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if f, ok := t.flips[key]; ok {
		delete(f.remaining, id)
		t.completeLocked(key, f)
	}
}

// keepOnlyIn drops the switch id from the flips of every state but those
// of keys, the states it follows now: a switch re-pointed to another state
// mid-flip shows nothing of the state it left, and must not hold that
// flip open (no FlipCompleted, a FlipStalled naming it).
func (t *flipTracker) keepOnlyIn(keys []string, id target.SwitchID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, f := range t.flips {
		if _, ok := f.remaining[id]; ok && !slices.Contains(keys, key) {
			delete(f.remaining, id)
			t.completeLocked(key, f)
		}
	}
}

// forgetState drops what is kept of the state key: it was deleted.
func (t *flipTracker) forgetState(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.flips, key)
	delete(t.completed, key)
}

// forget drops a switch that is gone from every flip it was in.
func (t *flipTracker) forget(id target.SwitchID) { t.keepOnlyIn(nil, id) }

// completeLocked ends f once every engine reported its followers and each
// showed the change; a flip without followers has no summary.
func (t *flipTracker) completeLocked(key string, f *flip) {
	if len(f.kinds) < t.engines || len(f.remaining) > 0 {
		return
	}
	delete(t.flips, key)
	if f.followers == 0 {
		return
	}
	t.completed[key] = flipDone{code: f.code, body: f.body, summary: v1beta1.FlipSummary{
		Followers: int32(f.followers), Namespaces: int32(len(f.namespaces)), CompletedAfter: formatAfter(t.now().Sub(f.started))}}
	if t.notify != nil {
		go t.notify(key)
	}
}

// progress is the flip of the state key still in progress, as a notifier
// of namespace reads it: how many followers do not show it yet, and the
// first of them in namespace (never another namespace's switch names); nil
// when no flip of the state is in progress.
func (t *flipTracker) progress(key, namespace string) *notify.FlipProgress {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.flips[key]
	if !ok || len(f.remaining) == 0 {
		return nil
	}
	p := &notify.FlipProgress{Remaining: len(f.remaining)}
	for id := range f.remaining {
		if id.Key.Namespace == namespace {
			p.Names = append(p.Names, id.Kind+"/"+id.Key.Name)
		}
	}
	slices.Sort(p.Names)
	if len(p.Names) > notify.MaxStalledNames {
		p.Names = p.Names[:notify.MaxStalledNames]
	}
	return p
}

// summarise sets the summary of the state key's complete flip on the
// newest entry of history, when that entry is the change the flip was of
// and has none yet. It reports whether it did, so that the summary is
// dropped once written (written).
func (t *flipTracker) summarise(key string, history []v1beta1.HistoryEntry) bool {
	if t == nil || len(history) == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	done, ok := t.completed[key]
	if !ok {
		return false
	}
	newest := &history[0]
	digest := ""
	if done.code != "" {
		digest = decision.BodyDigest(done.body)
	}
	if newest.StatusCode != done.code || newest.BodyDigest != digest {
		// Not in the history yet (a fixed state's followers follow its
		// spec before its status is written): the status write that
		// records the change carries the summary. A later change of the
		// state replaces the flip (expect).
		return false
	}
	if newest.Flip != nil {
		delete(t.completed, key)
		return false
	}
	summary := done.summary
	newest.Flip = &summary
	return true
}

// written drops the summary of the state key once its status holds it.
func (t *flipTracker) written(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.completed, key)
}

// settleFlips reports that the status of sw shows what it decided from
// each state it follows (flipTracker); a state it follows none of (not
// found, not admitted) counts as shown.
func (r *SwitchReconciler) settleFlips(sw target.Switch, f followed, req ctrl.Request) {
	if r.flips == nil {
		return
	}
	id := target.SwitchID{Kind: r.Kind.SwitchKind(), Key: req.NamespacedName}
	var keys []string
	settle := func(ref v1beta1.StateReference, state *v1beta1.DynamicIngressState) {
		namespace := sw.GetNamespace()
		if ref.IsCluster() {
			namespace = ""
		}
		key := stateKey(namespace, ref.Name)
		keys = append(keys, key)
		if state == nil {
			r.flips.forgetIn(key, id)
			return
		}
		r.flips.settled(key, state.Status.StatusCode, state.Status.Body, id)
	}
	spec := sw.SwitchSpec()
	if f.entries == nil {
		settle(spec.State, f.state)
	} else {
		for i, e := range spec.Entries() {
			if i < len(f.entries) {
				settle(e.State, f.entries[i].State)
			}
		}
	}
	r.flips.keepOnlyIn(keys, id)
}

// formatAfter writes a flip's duration as its summary shows it.
func formatAfter(d time.Duration) string {
	return fmt.Sprintf("%.2fs", d.Seconds())
}
