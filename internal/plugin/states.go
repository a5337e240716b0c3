package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/target"
)

// ParseState reads a state argument: NAME (a DynamicIngressState), or
// TYPE/NAME where TYPE is any name the API server knows the kind by
// (dis, dynamicingressstate, cdis, clusterdynamicingressstates, ...),
// resolved by mapper as kubectl resolves it.
func ParseState(arg string, mapper meta.RESTMapper) (v1beta1.StateReference, error) {
	resource, name, typed := strings.Cut(arg, "/")
	if !typed {
		return v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: arg}, nil
	}
	usage := &UsageError{Err: fmt.Errorf("%q: name a state as NAME, dis/NAME or cdis/NAME", arg)}
	if name == "" || strings.Contains(name, "/") {
		return v1beta1.StateReference{}, usage
	}
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Resource: resource})
	if err != nil || gvk.Group != v1beta1.GroupVersion.Group {
		return v1beta1.StateReference{}, usage
	}
	switch v1beta1.StateKind(gvk.Kind) {
	case v1beta1.StateKindNamespaced, v1beta1.StateKindCluster:
		return v1beta1.StateReference{Kind: v1beta1.StateKind(gvk.Kind), Name: name}, nil
	}
	return v1beta1.StateReference{}, usage
}

// StateSummary is one state as `kubectl dynamic status` lists them (its
// -o json shape: fields may be added, never renamed).
type StateSummary struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
	Mode       string `json:"mode"`
	StatusCode string `json:"statusCode"`
	Ready      string `json:"ready"`
	// Followers counts the switches that follow the state in the
	// namespaces listed.
	Followers int `json:"followers"`
}

// ListStates lists the states of ns ("" for every namespace) and the
// cluster states, each with its response and the number of switches that
// follow it there (by their single state or an entry of a list): one list per state kind and per switch kind. Cluster
// states the user may not list (view bound in one namespace grants no
// cluster-scoped read) are left out.
func ListStates(ctx context.Context, c client.Reader, kinds []target.Kind, ns string) ([]StateSummary, error) {
	counts := map[v1beta1.StateReference]map[string]int{}
	for _, kind := range kinds {
		list := kind.NewSwitchList()
		err := c.List(ctx, list, client.InNamespace(ns))
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", kindPlural(kind.SwitchKind()), err)
		}
		for _, sw := range kind.SwitchItems(list) {
			// A switch with a list follows each state it names, once.
			counted := map[v1beta1.StateReference]bool{}
			for _, e := range sw.SwitchSpec().Entries() {
				ref := v1beta1.StateReference{Kind: e.State.Kind, Name: e.State.Name}
				if counted[ref] {
					continue
				}
				counted[ref] = true
				if counts[ref] == nil {
					counts[ref] = map[string]int{}
				}
				counts[ref][sw.GetNamespace()]++
			}
		}
	}
	var out []StateSummary
	states := &v1beta1.DynamicIngressStateList{}
	if err := c.List(ctx, states, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing states: %w", err)
	}
	for i := range states.Items {
		s := &states.Items[i]
		out = append(out, summarize(string(v1beta1.StateKindNamespaced), s.Name, s.Namespace, s,
			counts[v1beta1.StateReference{Kind: v1beta1.StateKindNamespaced, Name: s.Name}][s.Namespace]))
	}
	clusterStates := &v1beta1.ClusterDynamicIngressStateList{}
	err := c.List(ctx, clusterStates)
	switch {
	case apierrors.IsForbidden(err), meta.IsNoMatchError(err):
	case err != nil:
		return nil, fmt.Errorf("listing cluster states: %w", err)
	}
	for i := range clusterStates.Items {
		s := &clusterStates.Items[i]
		followers := 0
		for _, n := range counts[v1beta1.StateReference{Kind: v1beta1.StateKindCluster, Name: s.Name}] {
			followers += n
		}
		out = append(out, summarize(string(v1beta1.StateKindCluster), s.Name, "", s.StateView(), followers))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind == string(v1beta1.StateKindNamespaced)
		}
		return out[i].Namespace < out[j].Namespace || out[i].Namespace == out[j].Namespace && out[i].Name < out[j].Name
	})
	return out, nil
}

// summarize is one state's line.
func summarize(kind, name, ns string, state *v1beta1.DynamicIngressState, followers int) StateSummary {
	out := StateSummary{Kind: kind, Name: name, Namespace: ns, Mode: string(state.Status.Mode), StatusCode: state.Status.StatusCode, Followers: followers}
	if ready := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady); ready != nil {
		out.Ready = string(ready.Status)
	}
	return out
}

// ObjectName names an object of the operator's API group, for -o name.
type ObjectName struct {
	Kind, Namespace, Name string
}

// StateNames are the states listed, for -o name.
func StateNames(states []StateSummary) []ObjectName {
	out := make([]ObjectName, 0, len(states))
	for _, s := range states {
		out = append(out, ObjectName{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name})
	}
	return out
}

// Names are the switches of the report, for -o name.
func (r Report) Names() []ObjectName {
	out := make([]ObjectName, 0, len(r.Switches))
	for _, sw := range r.Switches {
		ns := sw.Namespace
		if ns == "" {
			ns = r.State.Namespace
		}
		out = append(out, ObjectName{Kind: sw.Kind, Namespace: ns, Name: sw.Name})
	}
	return out
}

// Names are the switches that would change, for -o name.
func (r PreviewReport) Names() []ObjectName {
	out := make([]ObjectName, 0, len(r.Changes))
	for _, ch := range r.Changes {
		out = append(out, ObjectName{Kind: ch.Kind, Namespace: ch.item.Switch.GetNamespace(), Name: ch.Name})
	}
	return out
}

// kindPlural is a kind's plural as messages write it: DynamicIngresses,
// DynamicHTTPRoutes, Ingresses, HTTPRoutes.
func kindPlural(kind string) string {
	if strings.HasSuffix(kind, "s") {
		return kind + "es"
	}
	return kind + "s"
}
