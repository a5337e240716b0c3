// Package controlplane finds and runs the project's own Kubernetes control
// plane (kube-apiserver, etcd, kube-controller-manager, kubectl), built by
// the Makefile into bin/k8s.
package controlplane

import (
	"os"
	"path/filepath"
	"runtime"
)

// KubernetesVersion is the version of the control plane the Makefile builds.
const KubernetesVersion = "1.36.3"

// RepoRoot is the root of this repository's working tree.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is the directory of the control-plane binaries: $KUBEBUILDER_ASSETS
// when set, else where the Makefile builds them.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin", "k8s", KubernetesVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
}

// CRDDir is the directory of the generated CustomResourceDefinitions.
func CRDDir() string {
	return filepath.Join(RepoRoot(), "config", "crd", "bases")
}
