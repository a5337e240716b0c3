//go:build controlplane

// Package controlplane pins the Kubernetes control-plane programs that the
// tests and the demo run (kube-apiserver, kube-controller-manager, kubectl).
// The Makefile builds them from this module into bin/; nothing imports it.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
