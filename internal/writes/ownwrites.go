// Package writes is the manager's memory of its own writes and what its
// cache keeps: the resourceVersion of its last write of each object (so
// that a cache that lags behind it is waited for, never acted on), the
// targets it applied and their kept bodies (so that a target that holds
// what was applied is not applied again), its metadata-only writes, and
// the cache transforms that strip what the manager never reads
// (docs/architecture.md).
package writes

import (
	"context"
	"maps"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheLagRetry is how soon a reconcile whose cache does not yet hold the
// manager's own last write first looks again. The lag is a watch event in
// flight, usually a few milliseconds.
const cacheLagRetry = 20 * time.Millisecond

// maxCacheLagRetry caps the wait between two looks: a lag longer than a
// few milliseconds is a watch that broke, and polling it every 20ms would
// reconcile each affected object hundreds of times before maxCacheLag.
const maxCacheLagRetry = time.Second

// MaxCacheLag bounds how long a reconcile waits for its cache to hold one
// of its own writes. Past it the cache is trusted again: a watch that
// broke relists, and waiting forever would stall the object.
const MaxCacheLag = 10 * time.Second

// OwnWrites remembers the resourceVersion of the manager's last write to each
// object until the manager's cache holds that version or a newer one (see
// docs/architecture.md, "Reading our own writes").
//
// The cache lags behind the API server. A reconcile that reads an object
// older than what this manager itself wrote would decide from a status it
// already replaced: it would write and announce a switch a second time, or
// skip a write that is needed (an observation that went X, A, X before the
// cache showed A). With OwnWrites such a reconcile waits for the cache
// instead. It never skips work: it only decides when the cache is fresh
// enough to act on, so a restarted manager, which starts with an empty
// record and a freshly listed cache, behaves the same.
type OwnWrites struct {
	clock clock.PassiveClock

	mu     sync.Mutex
	writes map[ownWriteKey]ownWrite
	// pruneAt is when the writes older than MaxCacheLag are next dropped
	// (zero: no prune is due). A write the cache showed is forgotten by
	// the reconcile that sees it; a switch's status write is seen by no
	// reconcile until the switch's next one, which at rest may be hours
	// away, and an entry older than MaxCacheLag already counts as held.
	pruneAt time.Time
	// peak is the most writes held since the map was last made: a Go map
	// never gives back the room it grew to, so a prune that leaves a
	// quarter of it or less copies what is left into a new one.
	peak int
}

type ownWriteKey struct {
	// kind is the object's Go type: comparable and kept by the runtime,
	// so a key costs no string of its own.
	kind reflect.Type
	types.NamespacedName
}

type ownWrite struct {
	resourceVersion string
	// deleted: the write removed the object, so the cache holds the write
	// only once the object is gone from it (or replaced by a newer one).
	deleted bool
	at      time.Time
}

// NewOwnWrites returns an empty memory of own writes on clk.
func NewOwnWrites(clk clock.PassiveClock) *OwnWrites {
	return &OwnWrites{clock: clk, writes: map[ownWriteKey]ownWrite{}}
}

func keyOf(obj client.Object) ownWriteKey {
	return ownWriteKey{kind: reflect.TypeOf(obj), NamespacedName: client.ObjectKeyFromObject(obj)}
}

// Wrote records that obj, as the API server returned it, is the manager's
// latest write to that object.
func (w *OwnWrites) Wrote(obj client.Object) {
	w.record(obj, false)
}

// Deleted records that the manager Deleted obj, as it last read it.
func (w *OwnWrites) Deleted(obj client.Object) {
	w.record(obj, true)
}

// WroteVersion records that the manager's write left the object of
// example's kind at key at resourceVersion, for writes that return only
// the object's metadata.
func (w *OwnWrites) WroteVersion(example client.Object, key types.NamespacedName, resourceVersion string) {
	w.recordKey(ownWriteKey{kind: reflect.TypeOf(example), NamespacedName: key}, resourceVersion, false)
}

func (w *OwnWrites) record(obj client.Object, deleted bool) {
	w.recordKey(keyOf(obj), obj.GetResourceVersion(), deleted)
}

func (w *OwnWrites) recordKey(key ownWriteKey, resourceVersion string, deleted bool) {
	if resourceVersion == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	w.writes[key] = ownWrite{resourceVersion: resourceVersion, deleted: deleted, at: now}
	w.peak = max(w.peak, len(w.writes))
	w.pruneLocked(now)
}

// pruneLocked drops, at most once every MaxCacheLag, the writes older than
// MaxCacheLag: CacheHolds already counts them as held, so dropping them
// changes no answer, and the record then stays the size of the writes in
// flight instead of one entry for each object written since the start.
func (w *OwnWrites) pruneLocked(now time.Time) {
	if now.Before(w.pruneAt) {
		return
	}
	for k, last := range w.writes {
		if now.Sub(last.at) > MaxCacheLag {
			delete(w.writes, k)
		}
	}
	w.pruneAt = now.Add(MaxCacheLag)
	if w.peak >= 64 && len(w.writes) <= w.peak/4 {
		// Not maps.Clone: it copies the map's tables at their size.
		fresh := make(map[ownWriteKey]ownWrite, len(w.writes))
		maps.Copy(fresh, w.writes)
		w.writes, w.peak = fresh, len(fresh)
	}
}

// Prune drops the writes older than MaxCacheLag now: the manager calls it
// every MaxCacheLag (RunPrune), so that at rest, when no write comes to
// prune on, the record empties too.
func (w *OwnWrites) Prune() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneAt = w.clock.Now()
	w.pruneLocked(w.pruneAt)
}

// Forget drops what is known of the object of obj's kind at key: call it
// when the object is not found.
func (w *OwnWrites) Forget(obj client.Object, key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.writes, ownWriteKey{kind: reflect.TypeOf(obj), NamespacedName: key})
}

// CacheHolds reports whether cached, as read from the cache, already shows
// the manager's last write to it. It forgets the write once it does.
func (w *OwnWrites) CacheHolds(cached client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := keyOf(cached)
	last, ok := w.writes[key]
	if !ok {
		return true
	}
	if holds(cached.GetResourceVersion(), last) || w.clock.Since(last.at) > MaxCacheLag {
		delete(w.writes, key)
		return true
	}
	return false
}

// holds says whether an object at resourceVersion cachedRV is at least as
// new as the write last (strictly newer, for a deletion: the same version
// is the object that was deleted). A version that cannot be compared
// counts as newer: the tracker then only loses its benefit.
func holds(cachedRV string, last ownWrite) bool {
	cmp, err := resourceversion.CompareResourceVersion(cachedRV, last.resourceVersion)
	if err != nil {
		return true
	}
	if last.deleted {
		return cmp > 0
	}
	return cmp >= 0
}

// RetryAfter is how soon a reconcile that found the cache behind the
// manager's last write to obj looks again (see lagRetry).
func (w *OwnWrites) RetryAfter(obj client.Object) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.writes[keyOf(obj)]
	if !ok {
		return cacheLagRetry
	}
	return lagRetry(w.clock.Since(last.at))
}

// lagRetry backs off from cacheLagRetry: a reconcile that has waited
// `waited` since the write waits as long again, up to maxCacheLagRetry, so
// the usual lag of milliseconds costs a retry or two, and an outage until
// maxCacheLag about twenty instead of five hundred.
func lagRetry(waited time.Duration) time.Duration {
	return min(max(waited, cacheLagRetry), maxCacheLagRetry)
}

// len is the number of writes the cache does not show yet.
func (w *OwnWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// RunPrune calls Prune every MaxCacheLag until ctx ends: a manager
// Runnable (manager.RunnableFunc).
func (w *OwnWrites) RunPrune(ctx context.Context) error {
	wait.UntilWithContext(ctx, func(context.Context) { w.Prune() }, MaxCacheLag)
	return nil
}
