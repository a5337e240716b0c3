package flip

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/notify"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// Tracker follows each change of a state's response until every
// follower that this manager serves shows it in its status, and then has
// the state's history entry of the change carry the flip's summary
// (followers, completedAfter): one more write of the state per change,
// never one per follower (docs/behaviour.md, "History"). Both switch
// engines report to it.
type Tracker struct {
	// Engines is how many switch Engines (kinds) report followers: a flip
	// is complete only once each has.
	Engines int
	// Notify has the state engine reconcile a state ("namespace/name",
	// "/name" for a cluster state).
	Notify func(key string)
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

// NewTracker returns a tracker for engines switch engines (kinds), on the
// clock now.
func NewTracker(engines int, now func() time.Time) *Tracker {
	return &Tracker{Engines: engines, now: now, flips: map[string]*flip{}, completed: map[string]flipDone{}}
}

// StateKey names a state as the state engine's queue does.
func StateKey(namespace, name string) string { return namespace + "/" + name }

// Expect starts following the change of the state key to (code, body), or
// adds kind's followers to it: keys are the switches of kind that follow
// the state.
func (t *Tracker) Expect(key, code, body, kind string, keys []types.NamespacedName) {
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

// Settled reports that the status of the switch id shows what it decided
// from the state key answering (code, body).
func (t *Tracker) Settled(key, code, body string, id target.SwitchID) {
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

// ForgetIn drops the switch id from the flip of the state key: it follows
// the state no more (not found, not admitted), so it shows nothing of it.
func (t *Tracker) ForgetIn(key string, id target.SwitchID) {
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

// KeepOnlyIn drops the switch id from the flips of every state but those
// of keys, the states it follows now: a switch re-pointed to another state
// mid-flip shows nothing of the state it left, and must not hold that
// flip open (no FlipCompleted, a FlipStalled naming it).
func (t *Tracker) KeepOnlyIn(keys []string, id target.SwitchID) {
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

// ForgetState drops what is kept of the state key: it was deleted.
func (t *Tracker) ForgetState(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.flips, key)
	delete(t.completed, key)
}

// Forget drops a switch that is gone from every flip it was in.
func (t *Tracker) Forget(id target.SwitchID) { t.KeepOnlyIn(nil, id) }

// completeLocked ends f once every engine reported its followers and each
// showed the change; a flip without followers has no summary.
func (t *Tracker) completeLocked(key string, f *flip) {
	if len(f.kinds) < t.Engines || len(f.remaining) > 0 {
		return
	}
	delete(t.flips, key)
	if f.followers == 0 {
		return
	}
	t.completed[key] = flipDone{code: f.code, body: f.body, summary: v1beta1.FlipSummary{
		Followers: int32(f.followers), Namespaces: int32(len(f.namespaces)), CompletedAfter: decision.FormatAfter(t.now().Sub(f.started))}}
	if t.Notify != nil {
		go t.Notify(key)
	}
}

// Progress is the flip of the state key still in Progress, as a notifier
// of namespace reads it: how many followers do not show it yet, and the
// first of them in namespace (never another namespace's switch names); nil
// when no flip of the state is in Progress.
func (t *Tracker) Progress(key, namespace string) *notify.FlipProgress {
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

// Summarise sets the summary of the state key's complete flip on the
// newest entry of history, when that entry is the change the flip was of
// and has none yet. It reports whether it did, so that the summary is
// dropped once written (written).
func (t *Tracker) Summarise(key string, history []v1beta1.HistoryEntry) bool {
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

// Written drops the summary of the state key once its status holds it.
func (t *Tracker) Written(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.completed, key)
}
