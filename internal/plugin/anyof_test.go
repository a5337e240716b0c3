package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/decision"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// Switches with spec.anyOf or spec.allOf: status, preview, wait and
// override follow every state they name and decide from all entries.

// answering is the DynamicIngressState name in shop, fixed at code, its
// status showing it.
func answering(name, code string) *v1beta1.DynamicIngressState {
	s := builders.FixedState(ns, name, code, "").Obj()
	s.Status.StatusCode = code
	s.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonFixed}}
	return s
}

// listSwitch is a DynamicIngress in shop with a list of entries (allOf
// when all, else anyOf), without a target while active and sent to the
// web service while passive, at generation 1; its status shows mode
// (active or passive, synced) when mode is set.
func listSwitch(name string, all bool, policy v1beta1.FailurePolicy, mode string, entries ...v1beta1.StateEntry) *v1beta1.DynamicIngress {
	w := builders.DynamicIngress(ns, name).FailurePolicy(policy).
		Passive(builders.IngressTo("shop.example.com", "web")).Active(nil)
	if all {
		w.AllOf(entries...)
	} else {
		w.AnyOf(entries...)
	}
	sw := w.Obj()
	sw.Generation = 1
	if mode != "" {
		sw.Status.Conditions = []metav1.Condition{
			{Type: v1beta1.ConditionActive, Status: decision.ConditionStatus(mode == "active"), Reason: v1beta1.ReasonMatched, ObservedGeneration: 1},
			{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1beta1.ReasonSynced, ObservedGeneration: 1},
		}
	}
	return sw
}

// refuseClusterStates refuses every read of cluster states, as view bound
// in one namespace does.
func refuseClusterStates(r request) error {
	if r.resource == clusterStates {
		return forbidden(r)
	}
	return nil
}

const cannotReadKS = `reading it needs get on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped), which you lack`

// TestStatusOfLists: status STATE lists the switches whose anyOf or allOf
// names the state, with the mode all their entries select (the other
// entries' states read), each entry's verdict, and a note for a state it
// may not read (that entry counts as Unknown).
func TestStatusOfLists(t *testing.T) {
	e := builders.Entry
	ce := builders.ClusterEntry
	tests := []struct {
		name    string
		ref     v1beta1.StateReference
		refused refuse
		objs    []client.Object
		// want is one line per switch: name mode, then each entry's
		// verdict for a list.
		want  []string
		notes []string
	}{
		{"anyOf: the other entry matches", namespaced("flag"), nil,
			[]client.Object{answering("flag", "200"), answering("other", "503"),
				listSwitch("any", false, "", "", e("flag", "flag", "503"), e("other", "other", "503"))},
			[]string{"any active anyOf flag=False/NotMatched other=True/Matched"}, nil},
		{"anyOf: none matches", namespaced("flag"), nil,
			[]client.Object{answering("flag", "200"), answering("other", "200"),
				listSwitch("any", false, "", "", e("flag", "flag", "503"), e("other", "other", "503"))},
			[]string{"any passive anyOf flag=False/NotMatched other=False/NotMatched"}, nil},
		{"allOf: every entry matches", namespaced("flag"), nil,
			[]client.Object{answering("flag", "503"), answering("other", "200"),
				listSwitch("all", true, "", "", e("flag", "flag", "503"), e("other", "other", "200"))},
			[]string{"all active allOf flag=True/Matched other=True/Matched"}, nil},
		{"allOf: the other entry does not match", namespaced("flag"), nil,
			[]client.Object{answering("flag", "503"), answering("other", "503"),
				listSwitch("all", true, "", "", e("flag", "flag", "503"), e("other", "other", "200"))},
			[]string{"all passive allOf flag=True/Matched other=False/NotMatched"}, nil},
		{"the other entry's state is missing: failurePolicy Active", namespaced("flag"), nil,
			[]client.Object{answering("flag", "200"),
				listSwitch("any", false, v1beta1.FailurePolicyActive, "", e("flag", "flag", "503"), e("gone", "gone", "503"))},
			[]string{"any active anyOf flag=False/NotMatched gone=Unknown/StateNotFound"}, nil},
		{"a cluster state it may not read counts as Unknown, and says so", namespaced("flag"), refuseClusterStates,
			[]client.Object{answering("flag", "200"), readyClusterState("503"),
				listSwitch("any", false, v1beta1.FailurePolicyActive, "", e("flag", "flag", "503"), ce("platform", "ks", "503"))},
			[]string{"any active anyOf flag=False/NotMatched platform=Unknown/NotReadable"},
			[]string{`ClusterDynamicIngressState "ks", named in the anyOf/allOf of 1 switch, counts as Unknown there: ` + cannotReadKS}},
		{"a cluster state it reads", namespaced("flag"), nil,
			[]client.Object{answering("flag", "200"), readyClusterState("503"),
				listSwitch("any", false, v1beta1.FailurePolicyPassive, "", e("flag", "flag", "503"), ce("platform", "ks", "503"))},
			[]string{"any active anyOf flag=False/NotMatched platform=True/Matched"}, nil},
		{"beside a single-state follower; a list without the state is not listed", namespaced("flag"), nil,
			[]client.Object{answering("flag", "503"), answering("other", "503"),
				switchFor("single", nil, ""),
				listSwitch("elsewhere", false, "", "", e("other", "other", "503"))},
			[]string{"single active"}, nil},
		{"status cdis/NAME: the followers whose list names it", v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: "ks"}, nil,
			[]client.Object{answering("flag", "200"), readyClusterState("200"),
				listSwitch("any", false, "", "", e("flag", "flag", "503"), ce("platform", "ks", "503")),
				listSwitch("all", true, "", "", ce("platform", "ks", "200"), e("flag", "flag", "200"))},
			[]string{"shop/all active allOf platform=True/Matched flag=True/Matched", "shop/any passive anyOf flag=False/NotMatched platform=False/NotMatched"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, tt.refused, tt.objs...)
			_, report, err := StatusOfState(context.Background(), c, []target.Kind{target.Ingress{}}, ns, tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sw := range report.Switches {
				line := sw.Name + " " + sw.Mode
				if sw.Namespace != "" {
					line = sw.Namespace + "/" + line
				}
				if sw.Combination != "" {
					line += " " + sw.Combination
				}
				for _, e := range sw.Entries {
					line += " " + e.Name + "=" + e.Matched + "/" + e.Reason
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("switches (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.notes, report.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func namespaced(name string) v1beta1.StateReference {
	return v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: name}
}

// TestStatusOfListsShape: -o json names each entry's state and verdict,
// and the table's line for a list says what each entry decides.
func TestStatusOfListsShape(t *testing.T) {
	c := fakeCluster(t, nil, answering("flag", "200"), readyClusterState("503"),
		listSwitch("web", false, "", "active", builders.Entry("window", "flag", "503"), builders.ClusterEntry("platform", "ks", "503")))
	_, report, err := StatusOf(context.Background(), c, []target.Kind{target.Ingress{}}, ns, "flag")
	if err != nil {
		t.Fatal(err)
	}
	want := []SwitchReport{{Kind: "DynamicIngress", Name: "web", Target: "shop/web", Mode: "active", InShape: true, Override: "none", Synced: true,
		Combination: "anyOf", Entries: []EntryReport{
			{Name: "window", State: "flag", Matched: "False", Reason: v1beta1.ReasonNotMatched},
			{Name: "platform", State: "cdis/ks", Matched: "True", Reason: v1beta1.ReasonMatched},
		}}}
	if diff := cmp.Diff(want, report.Switches); diff != "" {
		t.Errorf("switches (-want +got):\n%s", diff)
	}
	line := `DynamicIngress "web" anyOf(2): window (flag) False NotMatched, platform (cdis/ks) True Matched`
	if diff := cmp.Diff(line, report.Switches[0].EntriesLine()); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
}

// TestChangesOfLists: preview computes a list's mode with the state's
// hypothetical answer and the other entries' current answers; a state it
// may not read counts as Unknown (the note says so).
func TestChangesOfLists(t *testing.T) {
	e := builders.Entry
	ce := builders.ClusterEntry
	tests := []struct {
		name    string
		refused refuse
		objs    []client.Object
		answer  string
		// want is "from->to", "" when the mode would not change.
		want  string
		notes int
	}{
		{"anyOf: the answer matches, the other does not", nil, []client.Object{answering("flag", "200"), answering("other", "200"),
			listSwitch("sw", false, "", "", e("flag", "flag", "503"), e("other", "other", "503"))}, "503", "passive->active", 0},
		{"anyOf: the other entry keeps it active", nil, []client.Object{answering("flag", "503"), answering("other", "503"),
			listSwitch("sw", false, "", "", e("flag", "flag", "503"), e("other", "other", "503"))}, "200", "", 0},
		{"allOf: the answer completes it", nil, []client.Object{answering("flag", "200"), answering("other", "503"),
			listSwitch("sw", true, "", "", e("flag", "flag", "503"), e("other", "other", "503"))}, "503", "passive->active", 0},
		{"allOf: the other entry keeps it passive", nil, []client.Object{answering("flag", "200"), answering("other", "200"),
			listSwitch("sw", true, "", "", e("flag", "flag", "503"), e("other", "other", "503"))}, "503", "", 0},
		{"allOf: the answer breaks it", nil, []client.Object{answering("flag", "503"), answering("other", "503"),
			listSwitch("sw", true, "", "", e("flag", "flag", "503"), e("other", "other", "503"))}, "200", "active->passive", 0},
		{"allOf with a state it may not read: the matching answer leaves it to failurePolicy", refuseClusterStates,
			[]client.Object{answering("flag", "200"), readyClusterState("503"),
				listSwitch("sw", true, v1beta1.FailurePolicyPassive, "", e("flag", "flag", "503"), ce("platform", "ks", "503"))}, "503", "", 1},
		{"anyOf with a state it may not read: the matching answer decides", refuseClusterStates,
			[]client.Object{answering("flag", "200"), readyClusterState("503"),
				listSwitch("sw", false, v1beta1.FailurePolicyPassive, "", e("flag", "flag", "503"), ce("platform", "ks", "503"))}, "503", "passive->active", 1},
		{"the same state in two entries takes the answer in both", nil, []client.Object{answering("flag", "200"),
			listSwitch("sw", true, "", "", e("code", "flag", "503"), e("again", "flag", "503"))}, "503", "passive->active", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, tt.refused, tt.objs...)
			snap, err := Read(context.Background(), c, []target.Kind{target.Ingress{}}, ns, "flag")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, ch := range Changes(snap, WithAnswer(snap.State, Answer{StatusCode: tt.answer})) {
				got = ch.From + "->" + ch.To
				if ch.Follows == "" {
					t.Errorf("change of %q does not say what it follows", ch.Name)
				}
			}
			if got != tt.want {
				t.Errorf("change %q, want %q", got, tt.want)
			}
			if len(snap.Notes) != tt.notes {
				t.Errorf("notes %q, want %d", snap.Notes, tt.notes)
			}
		})
	}
}

// TestWaitOnLists: wait includes the switches whose list names the state
// and is done when each one's status shows the mode all its entries
// select now (the other entries' states watched too).
func TestWaitOnLists(t *testing.T) {
	e := builders.Entry
	ce := builders.ClusterEntry
	tests := []struct {
		name string
		objs []client.Object
		// pending is what wait times out on, nil when it is done.
		pending []string
	}{
		{"active by the cluster entry, and its status says so", []client.Object{answering("flag", "200"), readyClusterState("503"),
			listSwitch("web", false, "", "active", e("window", "flag", "503"), ce("platform", "ks", "503"))}, nil},
		{"active by the other namespaced entry, and its status says so", []client.Object{answering("flag", "200"), answering("other", "503"),
			listSwitch("web", false, "", "active", e("window", "flag", "503"), e("other", "other", "503"))}, nil},
		{"active by the cluster entry, its status shows passive", []client.Object{answering("flag", "200"), readyClusterState("503"),
			listSwitch("web", false, "", "passive", e("window", "flag", "503"), ce("platform", "ks", "503"))},
			[]string{`DynamicIngress "web": its status is not synced (Matched: the status shows passive mode yet)`}},
		{"allOf passive by the other entry, its status shows active", []client.Object{answering("flag", "503"), answering("other", "200"),
			listSwitch("web", true, "", "active", e("window", "flag", "503"), e("other", "other", "503"))},
			[]string{`DynamicIngress "web": its target shop/web is not in passive shape; its status is not synced (Matched: the status shows active mode yet)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fakeCluster(t, nil, tt.objs...)
			timeout := 5 * time.Second
			if tt.pending != nil {
				timeout = time.Second
			}
			_, report, err := Wait(context.Background(), c, []target.Kind{target.Ingress{}}, WaitOptions{Namespace: ns, State: "flag", Timeout: timeout})
			var timedOut *TimeoutError
			switch {
			case tt.pending == nil && err != nil:
				t.Fatalf("wait: %v", err)
			case tt.pending == nil:
				if report.Summary.Total != 1 {
					t.Errorf("summary %+v, want the list switch", report.Summary)
				}
			case !errors.As(err, &timedOut):
				t.Fatalf("wait returned %v, want a timeout", err)
			default:
				if diff := cmp.Diff(tt.pending, timedOut.Pending); diff != "" {
					t.Errorf("pending (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestOverrideOnLists: override pins a list switch over all its entries,
// and says what all its entries would select (decision.SelectedOf), or why
// it cannot tell.
func TestOverrideOnLists(t *testing.T) {
	e := builders.Entry
	ce := builders.ClusterEntry
	tests := []struct {
		name    string
		refused refuse
		all     bool
		mode    v1beta1.Mode
		want    OverrideResult
		line    string
	}{
		{"anyOf pinned passive: the cluster entry selects active", nil, false, v1beta1.ModePassive,
			OverrideResult{Override: "passive", Mode: "passive", StateSelects: "active", Follows: "anyOf(2)"},
			`DynamicIngress "web": spec.override pins passive mode; its anyOf(2) states would select active mode`},
		{"allOf pinned active: the window entry selects passive", nil, true, v1beta1.ModeActive,
			OverrideResult{Override: "active", Mode: "active", StateSelects: "passive", Follows: "allOf(2)"},
			`DynamicIngress "web": spec.override pins active mode; its allOf(2) states would select passive mode`},
		{"anyOf removed", nil, false, "",
			OverrideResult{Override: "none", Mode: "active", StateSelects: "active", Follows: "anyOf(2)"},
			`DynamicIngress "web": spec.override removed; it follows its anyOf(2) states, which select active mode`},
		{"a state it may not read", refuseClusterStates, false, v1beta1.ModePassive,
			OverrideResult{Override: "passive", Mode: "passive", StateSelects: Unknown, Follows: "anyOf(2)",
				CouldNotTell: `entry "platform" (ClusterDynamicIngressState "ks"): ` + cannotReadKS},
			`DynamicIngress "web": spec.override pins passive mode; could not tell what its anyOf(2) states would select: entry "platform" (ClusterDynamicIngressState "ks"): ` + cannotReadKS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := listSwitch("web", tt.all, "", "passive", e("window", "flag", "503"), ce("platform", "ks", "503"))
			shop := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"tier": "public"}}}
			c := fakeCluster(t, tt.refused, answering("flag", "200"), readyClusterState("503"), shop, sw)
			got, err := Override(context.Background(), c, target.Ingress{}, ns, "web", tt.mode, OverrideOptions{})
			if err != nil {
				t.Fatalf("override: %v", err)
			}
			want := tt.want
			want.Kind, want.Name = "DynamicIngress", "web"
			if tt.mode != "" {
				want.Pin = &PinReport{Mode: tt.mode, Phase: v1beta1.OverridePhaseInEffect}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.line, got.String()); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListStatesCountsLists: a switch with a list counts as a follower of
// each state it names, once.
func TestListStatesCountsLists(t *testing.T) {
	c := fakeCluster(t, nil, answering("flag", "200"), answering("other", "200"), switchFor("single", nil, ""),
		listSwitch("web", false, "", "", builders.Entry("a", "flag", "503"), builders.Entry("b", "flag", "500"), builders.Entry("c", "other", "503")))
	states, err := ListStates(context.Background(), c, []target.Kind{target.Ingress{}}, ns)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range states {
		got = append(got, s.Name+"="+strings.Repeat("*", s.Followers))
	}
	if diff := cmp.Diff([]string{"flag=**", "other=*"}, got); diff != "" {
		t.Errorf("followers (-want +got):\n%s", diff)
	}
}
