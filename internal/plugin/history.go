package plugin

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// HistoryReport is what `kubectl dynamic history STATE` prints: the state
// and its status.history, newest first, the entries as the API has them,
// and beside them the pins of its followers (its -o json shape: fields may
// be added, never renamed).
type HistoryReport struct {
	State   HistoryState           `json:"state"`
	History []v1beta1.HistoryEntry `json:"history"`
	// Pins are when the state's followers were pinned, and when their pins
	// ended, newest first (pinEvents).
	Pins []PinEvent `json:"pins,omitempty"`
	// Notes say which followers the user may not list, whose pins are
	// left out.
	Notes []string `json:"notes,omitempty"`
}

// The events of a pin that history shows.
const (
	// PinEventPinned is a pin set or last changed (status.override.at).
	PinEventPinned = "Pinned"
	// PinEventExpired is a pin's end passed (status.override.until, once
	// its phase is Expired): its switch follows its state again.
	PinEventExpired = "PinExpired"
	// PinEventApproved is a pin approved by a second person
	// (status.override.approvedBy, at the override-approved-at
	// annotation's time).
	PinEventApproved = "PinApproved"
)

// PinEvent is a pin of a follower of the state, or its end.
type PinEvent struct {
	// Event is Pinned, PinApproved or PinExpired.
	Event string      `json:"event"`
	Time  metav1.Time `json:"time"`
	// Kind and Name name the switch; Namespace is its, for the followers
	// of a cluster state.
	Kind      string       `json:"kind"`
	Name      string       `json:"name"`
	Namespace string       `json:"namespace,omitempty"`
	Mode      v1beta1.Mode `json:"mode"`
	By        string       `json:"by,omitempty"`
	Until     *metav1.Time `json:"until,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	// ApprovedBy is who approved the pin, for a pin that needed approval.
	ApprovedBy string `json:"approvedBy,omitempty"`
}

// pinEvents are the events of the pins of items as their status.override
// has them, newest first: Pinned at its at (none when it is not known),
// PinApproved at its approval's time for a pin a second person approved,
// and PinExpired at its until once its phase is Expired. A pin removed
// leaves its status.override, and so no event. cluster says the items
// follow a cluster state, and are named with their namespace.
func pinEvents(items []Item, cluster bool) []PinEvent {
	var out []PinEvent
	for _, item := range items {
		sw := item.Switch
		pin := sw.SwitchStatus().Override
		if pin == nil {
			continue
		}
		event := PinEvent{Kind: item.Kind.SwitchKind(), Name: sw.GetName(), Mode: pin.Mode, By: pin.By, Until: pin.Until, Reason: pin.Reason,
			ApprovedBy: pin.ApprovedBy}
		if cluster {
			event.Namespace = sw.GetNamespace()
		}
		if pin.At != nil {
			pinned := event
			pinned.Event, pinned.Time = PinEventPinned, *pin.At
			out = append(out, pinned)
		}
		if at, err := time.Parse(v1beta1.OverrideAtFormat, sw.GetAnnotations()[v1beta1.OverrideApprovedAtAnnotation]); err == nil && pin.ApprovedBy != "" {
			approved := event
			approved.Event, approved.Time = PinEventApproved, metav1.NewTime(at).Rfc3339Copy()
			out = append(out, approved)
		}
		if pin.Phase == v1beta1.OverridePhaseExpired && pin.Until != nil {
			expired := event
			expired.Event, expired.Time = PinEventExpired, *pin.Until
			out = append(out, expired)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time.Time) })
	return out
}

// readPins lists the switches of kinds that follow the state ref names (in
// ns; for a cluster state, in ns or every namespace when "") and gives the
// events of their pins; a note for each kind the user may not list.
func readPins(ctx context.Context, c client.Reader, kinds []target.Kind, ns string, ref v1beta1.StateReference) ([]PinEvent, []string, error) {
	var (
		items []Item
		notes []string
	)
	for _, kind := range kinds {
		var (
			found []Item
			note  string
			err   error
		)
		if ref.IsCluster() {
			found, note, err = listClusterFollowers(ctx, c, kind, ns, ref.Name)
		} else {
			list := kind.NewSwitchList()
			switch err = c.List(ctx, list, client.InNamespace(ns)); {
			case err == nil:
				found = followers(kind, kind.SwitchItems(list), ref.Name)
			case meta.IsNoMatchError(err):
				err = nil
			default:
				err = fmt.Errorf("listing %s in namespace %q: %w", kindPlural(kind.SwitchKind()), ns, err)
			}
		}
		switch {
		case apierrors.IsForbidden(err):
			where := fmt.Sprintf("in namespace %q", ns)
			if ns == "" {
				where = "in every namespace"
			}
			note = fmt.Sprintf("the pins of %s are left out: listing them %s needs list on %s, which you lack",
				kindPlural(kind.SwitchKind()), where, resourceName(v1beta1.GroupVersion.WithKind(kind.SwitchKind())))
		case err != nil:
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		items = append(items, found...)
	}
	return pinEvents(items, ref.IsCluster()), notes, nil
}

// HistoryState names the state a history is of.
type HistoryState struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// HistoryOf reads the state ref names (a DynamicIngressState in ns, or a
// ClusterDynamicIngressState) and returns its history, and the pins of its
// followers of kinds (in ns; for a cluster state in ns, or every namespace
// when ""). A state the user may not read is a PermissionError naming the
// permission, as wait's; followers the user may not list, a note.
func HistoryOf(ctx context.Context, c client.Reader, kinds []target.Kind, ns string, ref v1beta1.StateReference) (HistoryReport, error) {
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
	report.Pins, report.Notes, err = readPins(ctx, c, kinds, ns, ref)
	if err != nil {
		return HistoryReport{}, err
	}
	return report, nil
}

// Empty is the one line for a state without history and without pins
// among its followers; "" when it has some.
func (r HistoryReport) Empty() string {
	if len(r.History) > 0 || len(r.Pins) > 0 {
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

// PinColumn is the column the history table has when it shows pins: what
// each pin was.
const PinColumn = "PIN"

// Table is the history as the table prints it: its columns, and a row per
// change of the state and per pin event, newest first (a pin event after
// a change at the same second). The pin events' CAUSE is their event
// (Pinned, PinExpired) and their PIN what the pin was; the changes' PIN is
// "-". Without pin events, the table is the state's changes alone, without
// PIN.
func (r HistoryReport) Table() ([]string, [][]string) {
	if len(r.Pins) == 0 {
		rows := make([][]string, 0, len(r.History))
		for _, e := range r.History {
			rows = append(rows, HistoryRow(e))
		}
		return HistoryColumns, rows
	}
	columns := append(append([]string{}, HistoryColumns...), PinColumn)
	rows := make([][]string, 0, len(r.History)+len(r.Pins))
	changes, pins := r.History, r.Pins
	for len(changes) > 0 || len(pins) > 0 {
		if len(pins) == 0 || len(changes) > 0 && !pins[0].Time.After(changes[0].Time.Truncate(time.Second)) {
			rows = append(rows, append(HistoryRow(changes[0]), "-"))
			changes = changes[1:]
			continue
		}
		rows = append(rows, PinRow(pins[0]))
		pins = pins[1:]
	}
	return columns, rows
}

// PinRow is a pin event as the table prints it: "-" for the state's
// columns, its time in RFC 3339 (UTC), its event as CAUSE, and in PIN the
// switch and its pin: `DynamicIngress "storefront": active pinned by alice
// until 2026-12-02T03:00:00Z: INC-1234`, or once it ended
// `DynamicIngress "storefront": active pin by alice ended: INC-1234`.
func PinRow(p PinEvent) []string {
	name := fmt.Sprintf("%q", p.Name)
	if p.Namespace != "" {
		name = p.Namespace + "/" + p.Name
	}
	by := ""
	if p.By != "" {
		by = " by " + p.By
	}
	pin := fmt.Sprintf("%s %s: %s pinned%s", p.Kind, name, overrideName(p.Mode), by)
	switch {
	case p.Event == PinEventExpired:
		pin = fmt.Sprintf("%s %s: %s pin%s ended", p.Kind, name, overrideName(p.Mode), by)
	case p.Event == PinEventApproved:
		pin = fmt.Sprintf("%s %s: %s pin%s approved by %s", p.Kind, name, overrideName(p.Mode), by, p.ApprovedBy)
	case p.Until != nil:
		pin += " until " + p.Until.UTC().Format(time.RFC3339)
	default:
		pin += " with no end"
	}
	if p.Reason != "" {
		pin += ": " + p.Reason
	}
	return []string{"-", p.Time.UTC().Format(time.RFC3339), "-", p.Event, "-", "-", pin}
}

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
