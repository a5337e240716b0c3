package plugin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
)

// HistoryReport is what `kubectl dynamic history STATE` prints: the state
// and its status.history, newest first, the entries as the API has them
// (its -o json shape: fields may be added, never renamed).
type HistoryReport struct {
	State   HistoryState           `json:"state"`
	History []v1beta1.HistoryEntry `json:"history"`
}

// HistoryState names the state a history is of.
type HistoryState struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// HistoryOf reads the state ref names (a DynamicIngressState in ns, or a
// ClusterDynamicIngressState) and returns its history. A state the user
// may not read is a PermissionError naming the permission, as wait's.
func HistoryOf(ctx context.Context, c client.Reader, ns string, ref v1beta1.StateReference) (HistoryReport, error) {
	var (
		state client.Object
		key   = types.NamespacedName{Namespace: ns, Name: ref.Name}
		what  = &NotFoundError{Kind: "state", Name: ref.Name, Namespace: ns}
	)
	if ref.IsCluster() {
		key.Namespace = ""
		state = &v1beta1.ClusterDynamicIngressState{}
		what = &NotFoundError{Kind: "cluster state", Name: ref.Name}
	} else {
		state = &v1beta1.DynamicIngressState{}
	}
	err := c.Get(ctx, key, state)
	switch {
	case apierrors.IsNotFound(err):
		return HistoryReport{}, what
	case apierrors.IsForbidden(err):
		return HistoryReport{}, &PermissionError{Command: "history", Verb: "get",
			Resource: resourceName(v1beta1.GroupVersion.WithKind(string(ref.Kind))), Namespace: key.Namespace, ClusterScoped: ref.IsCluster(), Err: err}
	case err != nil:
		if ref.IsCluster() {
			return HistoryReport{}, fmt.Errorf("reading cluster state %q: %w", ref.Name, err)
		}
		return HistoryReport{}, fmt.Errorf("reading state %q in namespace %q: %w", ref.Name, ns, err)
	}
	report := HistoryReport{State: HistoryState{Kind: string(ref.Kind), Name: ref.Name, Namespace: key.Namespace}, History: []v1beta1.HistoryEntry{}}
	switch s := state.(type) {
	case *v1beta1.DynamicIngressState:
		report.History = append(report.History, s.Status.History...)
	case *v1beta1.ClusterDynamicIngressState:
		report.History = append(report.History, s.Status.History...)
	}
	return report, nil
}

// Empty is the one line for a state without history; "" when it has
// some.
func (r HistoryReport) Empty() string {
	if len(r.History) > 0 {
		return ""
	}
	if r.State.Namespace == "" {
		return fmt.Sprintf("No history for cluster state %q: no response change recorded yet", r.State.Name)
	}
	return fmt.Sprintf("No history for state %q in namespace %q: no response change recorded yet", r.State.Name, r.State.Namespace)
}

// Names is the state, for -o name.
func (r HistoryReport) Names() []ObjectName {
	return []ObjectName{{Kind: r.State.Kind, Namespace: r.State.Namespace, Name: r.State.Name}}
}

// HistoryColumns are the columns of the history table.
var HistoryColumns = []string{"SEQ", "TIME", "CODE", "CAUSE", "BODY", "FLIP"}

// HistoryRow is one entry as the table prints it: the sequence, the time
// in RFC 3339 (UTC, to the second), the status code ("-" when the state
// lost its response), the cause, the body digest shortened to 12 hex
// digits, and the flip summary ("-" until every follower showed it).
func HistoryRow(e v1beta1.HistoryEntry) []string {
	return []string{
		strconv.FormatInt(e.Sequence, 10),
		e.Time.UTC().Format(time.RFC3339),
		dashIfEmpty(e.StatusCode),
		string(e.Cause),
		shortDigest(e.BodyDigest),
		flipColumn(e.Flip),
	}
}

// digestHex is how many hex digits of a body digest the table shows, as
// a short Git commit: enough to tell two bodies apart at a glance.
const digestHex = 12

// shortDigest is "sha256:" and the first digestHex hex digits.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || d == "" {
		return dashIfEmpty(d)
	}
	if len(hex) > digestHex {
		hex = hex[:digestHex]
	}
	return algo + ":" + hex
}

// flipColumn is "22 followers in 6.31s", or "-" while there is no summary.
func flipColumn(f *v1beta1.FlipSummary) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%d %s in %s", f.Followers, pluralOf(int(f.Followers), "follower", "followers"), f.CompletedAfter)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
