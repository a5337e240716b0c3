package switches

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
)

// stateViewer is either kind of state: the DynamicIngressState view the
// decisions read.
type stateViewer interface {
	StateView() *v1beta1.DynamicIngressState
}

// fixedChanges remembers when the manager first saw each fixed state's
// spec give a response that its status did not show yet: the moment the
// switches that decide from the spec count their switch latency from, as
// they would from the status's lastUpdateTime.
type fixedChanges struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	seen  map[types.NamespacedName]fixedChange
}

type fixedChange struct {
	code, body string
	at         time.Time
}

func newFixedChanges(clk clock.PassiveClock) *fixedChanges {
	return &fixedChanges{clock: clk, seen: map[types.NamespacedName]fixedChange{}}
}

// note records a state the watch delivered: the first time its spec's
// response is seen ahead of its status, and nothing once the status shows
// it.
func (f *fixedChanges) note(obj client.Object) {
	view, ok := obj.(stateViewer)
	if !ok {
		return
	}
	state := view.StateView()
	key := client.ObjectKeyFromObject(state)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !decision.StatusLags(state) {
		delete(f.seen, key)
		return
	}
	code, body := decision.FollowedResponse(state)
	if last, ok := f.seen[key]; ok && last.code == code && last.body == body {
		return
	}
	f.seen[key] = fixedChange{code: code, body: body, at: f.clock.Now()}
}

// at is when the response state's spec gives was first seen, nil when it
// was not (or the status shows it).
func (f *fixedChanges) at(state *v1beta1.DynamicIngressState) *metav1.MicroTime {
	if state == nil || !decision.StatusLags(state) {
		return nil
	}
	code, body := decision.FollowedResponse(state)
	f.mu.Lock()
	defer f.mu.Unlock()
	if last, ok := f.seen[client.ObjectKeyFromObject(state)]; ok && last.code == code && last.body == body {
		return &metav1.MicroTime{Time: last.at}
	}
	return nil
}

// forget drops a state that is gone.
func (f *fixedChanges) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.seen, key)
}
