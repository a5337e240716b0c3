package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectl modes.
const (
	kubectlSSA = "kubectl-ssa"
	kubectlCSA = "kubectl-csa"
)

// setupKubectl writes the n manifests of each shape into dir/active and
// dir/passive, and creates the passive Ingresses as kubectl would have left
// them (so that the setup does not take kubectl's time): with the field
// manager "kubectl" for server-side apply, with the last-applied annotation
// for client-side apply.
func (b *bench) setupKubectl(ctx context.Context, mode, ns string, n int) (string, error) {
	h := b.h
	if err := h.ensureNamespace(ctx, ns); err != nil {
		return "", err
	}
	dir := filepath.Join(h.dir, ns)
	for _, active := range []bool{false, true} {
		sub := filepath.Join(dir, shapeDir(active))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return "", err
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(sub, objName(i)+".yaml"), manifestYAML(ns, objName(i), active), 0o644); err != nil {
				return "", err
			}
		}
	}
	if mode == kubectlSSA {
		if err := b.applyAll(ctx, inNamespace(ns, n), false, 64, "kubectl"); err != nil {
			return "", err
		}
	} else {
		ings := h.cs.NetworkingV1().Ingresses(ns)
		if err := parallel(n, 64, func(i int) error {
			ing := baselineIngress(ns, objName(i), false)
			ing.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied(ns, objName(i), false)}
			_, err := ings.Create(ctx, ing, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
			return err
		}); err != nil {
			return "", err
		}
	}
	// Warm kubectl's discovery cache, as a user's would be.
	if _, stderr, err := h.kubectl.Run("", "get", "ingresses", "-n", ns, "--cache-dir="+h.kubectlCache, "-o", "name"); err != nil {
		return "", fmt.Errorf("kubectl get: %v: %s", err, stderr)
	}
	return dir, nil
}

func shapeDir(active bool) string {
	if active {
		return "active"
	}
	return "passive"
}

// kubectlFlip runs the real kubectl on the directory of the new shape.
func (b *bench) kubectlFlip(ctx context.Context, mode, ns, dir string, n int, active bool) (flipRun, error) {
	run := flipRun{who: mode, n: n, active: active}
	ingW, err := watchArrivals(ctx, ingressLister{b.h, ns}, n, ingressShape(active))
	if err != nil {
		return run, err
	}
	defer ingW.stop()
	if ingW.before != 0 {
		return run, fmt.Errorf("%d Ingresses already have the new shape before the flip", ingW.before)
	}
	args := []string{"apply", "-f", filepath.Join(dir, shapeDir(active)), "--cache-dir=" + b.h.kubectlCache}
	if mode == kubectlSSA {
		args = append(args, "--server-side")
	}
	cmd := b.h.kubectl.Command("", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := b.collectAPIServerGarbage(ctx); err != nil {
		return run, err
	}
	cpu0 := b.h.cpu(nil)
	t0 := time.Now()
	ingW.startAt(t0)
	if err := cmd.Run(); err != nil {
		return run, fmt.Errorf("kubectl %v: %v: %s", args, err, stderr.String())
	}
	run.writerDone = time.Since(t0)
	if err := ingW.wait(flipTimeout(n, 10*time.Millisecond)); err != nil {
		return run, fmt.Errorf("%s flip: %w", mode, err)
	}
	run.cpu = b.h.cpu(nil).sub(cpu0)
	run.summarize(ingW.durations())
	return run, nil
}
