package plugin

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// TestOverrideOnAClusterFollower: override needs patch on the switch and
// nothing more; it says what the cluster state would select when the user
// may read what that takes, and why it cannot tell when not. The override
// stands either way.
func TestOverrideOnAClusterFollower(t *testing.T) {
	shop := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"tier": "public"}}}
	patchOnly := func(r request) error {
		if r.verb == "patch" && r.resource == dynamicIngresses {
			return nil
		}
		return forbidden(r)
	}
	switchesOnly := func(r request) error {
		if r.resource == dynamicIngresses {
			return nil
		}
		return forbidden(r)
	}
	readsAllButNamespaces := func(r request) error {
		if r.resource == "namespaces" {
			return forbidden(r)
		}
		return nil
	}
	const cannotReadState = "reading it needs get on clusterdynamicingressstates.ingress.dynamicingress.io (cluster-scoped), which you lack"
	tests := []struct {
		name    string
		refused refuse
		// policy and ready are the follower's failurePolicy and Ready reason.
		policy v1beta1.FailurePolicy
		ready  string
		mode   v1beta1.Mode
		dryRun string
		want   OverrideResult
		line   string
	}{
		{"patch only, pinned", patchOnly, "", v1beta1.ReasonSynced, v1beta1.ModePassive, "",
			OverrideResult{Override: "passive", Mode: "passive", StateSelects: Unknown, CouldNotTell: cannotReadState},
			`DynamicIngress "web": spec.override pins passive mode; could not tell what ClusterDynamicIngressState "ks" would select: ` + cannotReadState},
		{"patch only, removed", patchOnly, "", v1beta1.ReasonSynced, "", "",
			OverrideResult{Override: "none", Mode: Unknown, StateSelects: Unknown, CouldNotTell: cannotReadState},
			`DynamicIngress "web": spec.override removed; it follows ClusterDynamicIngressState "ks" again; could not tell which mode that selects: ` + cannotReadState},
		// A client dry run reads the switch instead: it sends nothing.
		{"the switches only, client dry run", switchesOnly, "", v1beta1.ReasonSynced, v1beta1.ModeActive, "client",
			OverrideResult{Override: "active", Mode: "active", StateSelects: Unknown, CouldNotTell: cannotReadState, DryRun: "client"},
			`DynamicIngress "web": spec.override pins active mode; could not tell what ClusterDynamicIngressState "ks" would select: ` + cannotReadState + ` (client dry run)`},
		{"reads everything", nil, "", v1beta1.ReasonSynced, v1beta1.ModePassive, "",
			OverrideResult{Override: "passive", Mode: "passive", StateSelects: "active"},
			`DynamicIngress "web": spec.override pins passive mode; state "ks" would select active mode`},
		{"no namespace read: admitted, as its status says", readsAllButNamespaces, "", v1beta1.ReasonSynced, "", "",
			OverrideResult{Override: "none", Mode: "active", StateSelects: "active"},
			`DynamicIngress "web": spec.override removed; it follows state "ks", which selects active mode`},
		{"no namespace read: not admitted, as its status says", readsAllButNamespaces, v1beta1.FailurePolicyPassive, v1beta1.ReasonStateNotAdmitted, "", "",
			OverrideResult{Override: "none", Mode: "passive", StateSelects: "passive"},
			`DynamicIngress "web": spec.override removed; it follows state "ks", which selects passive mode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := metav1.ConditionTrue
			if tt.ready != v1beta1.ReasonSynced {
				ready = metav1.ConditionFalse
			}
			c, admin := fakeClusterAndAdmin(t, tt.refused, readyClusterState("503"), shop, clusterFollower("shop", "web", tt.policy, false, ready, tt.ready))
			got, err := Override(context.Background(), c, target.Ingress{}, "shop", "web", tt.mode, OverrideOptions{DryRun: tt.dryRun})
			if err != nil {
				t.Fatalf("override: %v", err)
			}
			want := tt.want
			want.Kind, want.Name, want.State, want.StateKind = "DynamicIngress", "web", "ks", string(v1beta1.StateKindCluster)
			if tt.mode != "" {
				want.Pin = &PinReport{Mode: tt.mode, Phase: v1beta1.OverridePhaseInEffect}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.line, got.String()); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
			stored := &v1beta1.DynamicIngress{}
			if err := admin.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web"}, stored); err != nil {
				t.Fatal(err)
			}
			wantStored := tt.mode
			if tt.dryRun != "" {
				wantStored = ""
			}
			if stored.Spec.Override != wantStored {
				t.Errorf("spec.override stored = %q, want %q", stored.Spec.Override, wantStored)
			}
		})
	}
}
