// Package image_test checks the manager image that `make image` builds
// (docs/install.md) the way a container runtime would use it: it builds
// the image with the same code, reads it back from its OCI archive,
// checks each platform's config and filesystem, and runs the amd64
// image's entrypoint, taken out of its layer, as the image's user in a
// read-only root with the Helm chart's arguments against a local control
// plane, until it serves its webhooks and is ready.
package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"debug/buildinfo"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/dynamicingress/dynamic-ingress-operator/hack/release/internal/release"
	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
	"github.com/dynamicingress/dynamic-ingress-operator/test/bundle"
	"github.com/dynamicingress/dynamic-ingress-operator/test/suite"
)

// What this suite stamps into the image it builds.
var (
	stamp   = release.Stamp{Version: "0.0.0-imagetest", Commit: "0123456789abcdef0123456789abcdef01234567"}
	created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	source  = "https://" + release.ModulePath
	// platforms are the image's, in the order of its index.
	platforms = []release.Platform{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}}
)

var (
	// workDir holds the binaries, the archive and what tests unpack; it is
	// readable by the image's user.
	workDir string
	// archive is the image as make image writes it.
	archive string
	// index is the image read back from archive.
	index v1.ImageIndex
	// managers are the binaries the image was built from, by platform.
	managers []release.PlatformBinary
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if workDir, err = os.MkdirTemp("", "image-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(workDir) }()
	if err := os.Chmod(workDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := buildImage(); err != nil {
		fmt.Fprintln(os.Stderr, "building the image:", err)
		return 1
	}
	return m.Run()
}

// buildImage does what make image does, with this suite's stamp.
func buildImage() error {
	for _, p := range platforms {
		bin := filepath.Join(workDir, "manager-"+p.OS+"-"+p.Arch)
		if err := release.Build(context.Background(), controlplane.RepoRoot(), "./cmd", p, stamp, bin); err != nil {
			return err
		}
		managers = append(managers, release.PlatformBinary{Platform: p, Path: bin})
	}
	idx, err := release.Image(imageOptions())
	if err != nil {
		return err
	}
	archive = filepath.Join(workDir, "image.oci.tar")
	if err := release.WriteOCIArchive(idx, stamp.Version, created, archive); err != nil {
		return err
	}
	index, err = release.ReadOCIArchive(archive, filepath.Join(workDir, "layout"))
	return err
}

func imageOptions() release.ImageOptions {
	return release.ImageOptions{Managers: managers, Stamp: stamp, Source: source, Created: created}
}

// TestImageIndex checks what a registry and a runtime read: one OCI
// index with an image per platform, each labelled with the version,
// revision and source, running the manager as user 65532 from an
// otherwise empty filesystem (no shell, no other file), and the manager
// a static binary for its platform that carries CA roots.
func TestImageIndex(t *testing.T) {
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  stamp.Version,
		"org.opencontainers.image.revision": stamp.Commit,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "dynamic-ingress-operator",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	}
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	if diff := cmp.Diff(wantLabels, im.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	var got []string
	for _, d := range im.Manifests {
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, got); diff != "" {
		t.Fatalf("the index's platforms (-want +got):\n%s", diff)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, d := range im.Manifests {
		t.Run(d.Platform.Architecture, func(t *testing.T) {
			img, err := index.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if d.MediaType != types.OCIManifestSchema1 {
				t.Errorf("manifest media type %s, want %s", d.MediaType, types.OCIManifestSchema1)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture {
				t.Errorf("config platform %s/%s, index says %s/%s", cfg.OS, cfg.Architecture, d.Platform.OS, d.Platform.Architecture)
			}
			if cfg.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cfg.Config.User)
			}
			if diff := cmp.Diff([]string{"/manager"}, cfg.Config.Entrypoint); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			if len(cfg.Config.Cmd) > 0 {
				t.Errorf("cmd %q, want none (the chart passes the arguments)", cfg.Config.Cmd)
			}
			if diff := cmp.Diff(wantLabels, cfg.Config.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if !cfg.Created.Equal(created) {
				t.Errorf("created %s, want %s", cfg.Created.Time, created)
			}
			rootfs := extract(t, img)
			if diff := cmp.Diff([]string{"manager"}, rootfs.names); diff != "" {
				t.Errorf("the image's files (-want +got): want the manager alone, no shell:\n%s", diff)
			}
			if h := rootfs.headers["manager"]; h == nil || h.Mode&0o7777 != 0o555 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
				t.Errorf("/manager's header %+v, want mode 0555, owned by root, modified %s", h, created)
			}
			bin := filepath.Join(rootfs.dir, "manager")
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			if want := machines[d.Platform.Architecture]; f.Machine != want {
				t.Errorf("/manager is for %s, want %s", f.Machine, want)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("/manager asks for a dynamic loader: it must be static (CGO_ENABLED=0)")
				}
			}
			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
				t.Error("/manager does not embed golang.org/x/crypto/x509roots/fallback: HTTPS probes would find no CA roots in the image")
			}
			if !slices.Contains(info.Settings, debug.BuildSetting{Key: "-trimpath", Value: "true"}) {
				t.Error("/manager was not built with -trimpath")
			}
		})
	}
}

// TestImageIsReproducible builds the image again from the same binaries
// and stamp: the same index digest and the same archive, byte for byte.
func TestImageIsReproducible(t *testing.T) {
	again, err := release.Image(imageOptions())
	if err != nil {
		t.Fatal(err)
	}
	want, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("a second build has digest %s, the first %s", got, want)
	}
	archive2 := filepath.Join(t.TempDir(), "again.oci.tar")
	if err := release.WriteOCIArchive(again, stamp.Version, created, archive2); err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(archive)
	b, errB := os.ReadFile(archive2)
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("writing the same image twice gave two different OCI archives")
	}
}

// TestImageRunsAgainstAControlPlane runs the amd64 image's entrypoint as
// a container runtime would (the image's user, a read-only root as its
// working directory, no environment but HOME) with the arguments the Helm
// chart gives it, against a local control plane: --version prints the
// stamp, and the manager serves its webhooks over TLS with the
// certificate it was given, answers admission through the API server and
// reports ready, then stops cleanly.
func TestImageRunsAgainstAControlPlane(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("runs the linux/amd64 image's binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	img := platformImage(t, "amd64")
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	rootfs := extract(t, img)
	if err := os.Chmod(rootfs.dir, 0o555); err != nil {
		t.Fatal(err)
	}
	entrypoint := filepath.Join(rootfs.dir, filepath.FromSlash(cfg.Config.Entrypoint[0]))
	opts := controlplane.ProcessOptions{Dir: rootfs.dir, Env: []string{"HOME=/"}, Credential: imageUser(t, cfg.Config.User)}

	t.Run("--version", func(t *testing.T) {
		cmd := exec.Command(entrypoint, "--version")
		cmd.Dir, cmd.Env = opts.Dir, opts.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: opts.Credential}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("/manager --version: %v\n%s", err, out)
		}
		for _, want := range []string{stamp.Version, stamp.Commit, runtime.Version()} {
			if !strings.Contains(string(out), want) {
				t.Errorf("/manager --version printed %q, without %q", out, want)
			}
		}
	})

	cluster, err := controlplane.Start(controlplane.Options{Dir: filepath.Join(t.TempDir(), "cluster"), Webhooks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()

	// What the pod gets: the webhook certificate mounted from its Secret
	// (readable by the pod's user), and a kubeconfig in place of the
	// ServiceAccount token.
	mounts := filepath.Join(workDir, "mounts")
	certDir := filepath.Join(mounts, "serving-certs")
	for _, f := range []string{"tls.crt", "tls.key"} {
		copyReadable(t, filepath.Join(cluster.WebhookCertDir, f), filepath.Join(certDir, f))
	}
	kubeconfig := filepath.Join(mounts, "kubeconfig")
	copyReadable(t, cluster.Kubeconfig, kubeconfig)

	healthPort, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsPort, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := localArgs(t, chartArgs(t), map[string]string{
		"--health-probe-bind-address": fmt.Sprintf("127.0.0.1:%d", healthPort),
		"--metrics-bind-address":      fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--webhook-port":              strconv.Itoa(cluster.WebhookPort),
		"--webhook-cert-path":         certDir,
	})
	// Out of a cluster the manager needs a kubeconfig and, with leader
	// election, the Lease's namespace (in a pod, its own).
	args = append(args, "--kubeconfig="+kubeconfig, "--leader-election-namespace=default")

	logPath := filepath.Join(t.TempDir(), "manager.log")
	manager, err := controlplane.StartProcessWith(opts, logPath, entrypoint, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("manager log:\n%s", logs)
		}
	}()
	defer manager.Kill()

	servingCert, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	webhookAddr := fmt.Sprintf("127.0.0.1:%d", cluster.WebhookPort)
	kubectl := controlplane.Kubectl{Kubeconfig: cluster.Kubeconfig}
	state := `apiVersion: ingress.dynamicingress.io/v1beta1
kind: DynamicIngressState
metadata: {namespace: default, name: image-check}
spec:
  fixedResponse: {status: "200"}
`
	suite.Eventually(t, func() error {
		if manager.Exited() {
			return gomega.StopTrying("the manager exited")
		}
		if err := servesCertificate(webhookAddr, servingCert); err != nil {
			return err
		}
		// Through the API server: the validating and defaulting webhooks
		// answer a dry-run create.
		if _, stderr, err := kubectl.Run(state, "create", "--dry-run=server", "-f", "-"); err != nil {
			return fmt.Errorf("a dry-run create through the webhooks: %v: %s", err, stderr)
		}
		return ready(healthPort)
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(gomega.Succeed())

	manager.Stop(30 * time.Second)
	if err := manager.Err(); err != nil {
		t.Errorf("the manager did not stop cleanly on SIGTERM: %v", err)
	}
}

// chartArgs are the manager container's arguments in the chart rendered
// with its default values.
func chartArgs(t *testing.T) []string {
	t.Helper()
	objs, err := bundle.TryRenderChart(t, "dynamic-ingress-operator", "dynamic-ingress-operator-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	deploy := suite.Only[appsv1.Deployment](t, objs, "Deployment")
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			if len(c.Command) > 0 {
				t.Fatalf("the chart overrides the image's entrypoint with %q", c.Command)
			}
			return c.Args
		}
	}
	t.Fatal("the chart's Deployment has no manager container")
	return nil
}

// localArgs replaces the values of the flags in local, which must all be
// among args, with values that work on this machine.
func localArgs(t *testing.T, args []string, local map[string]string) []string {
	t.Helper()
	out := slices.Clone(args)
	seen := map[string]bool{}
	for i, a := range out {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := local[name]; ok {
			out[i], seen[name] = name+"="+v, true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(local)) {
		if !seen[name] {
			t.Fatalf("the chart no longer passes %s (args %q): update this test", name, args)
		}
	}
	return out
}

// imageUser is the image's user as a credential when this test can take
// it (as root); otherwise the manager runs as this test's user.
func imageUser(t *testing.T, user string) *syscall.Credential {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	uid, errU := strconv.ParseUint(u, 10, 32)
	gid, errG := strconv.ParseUint(g, 10, 32)
	if !ok || errU != nil || errG != nil {
		t.Fatalf("the image's user %q is not uid:gid", user)
	}
	if os.Geteuid() != 0 {
		t.Logf("not root: running the manager as uid %d instead of the image's %s", os.Geteuid(), user)
		return nil
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// servesCertificate checks that addr serves TLS with the certificate in
// certPEM (the one the manager was given).
func servesCertificate(addr string, certPEM []byte) error {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // compared with the expected certificate below
	if err != nil {
		return fmt.Errorf("TLS to the webhook port: %w", err)
	}
	defer func() { _ = conn.Close() }()
	peer := conn.ConnectionState().PeerCertificates
	block, _ := pem.Decode(certPEM)
	if block == nil || len(peer) == 0 || !bytes.Equal(peer[0].Raw, block.Bytes) {
		return errors.New("the webhook port serves another certificate than the one it was given")
	}
	return nil
}

// ready checks /readyz on the health port.
func ready(port int) error {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("/readyz: %s %s", resp.Status, body)
	}
	return nil
}

func platformImage(t *testing.T, arch string) v1.Image {
	t.Helper()
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			img, err := index.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("the index has no linux/%s image", arch)
	return nil
}

// rootFS is an image's filesystem unpacked into dir.
type rootFS struct {
	dir     string
	names   []string
	headers map[string]*tar.Header
}

// extract unpacks img's flattened filesystem (mutate.Extract, what a
// runtime would mount) into a directory readable by the image's user,
// with the modes the layer gives.
func extract(t *testing.T, img v1.Image) rootFS {
	t.Helper()
	dir, err := os.MkdirTemp(workDir, "rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs := rootFS{dir: dir, headers: map[string]*tar.Header{}}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")
		fs.names = append(fs.names, name)
		fs.headers[name] = h
		if h.Typeflag != tar.TypeReg {
			continue
		}
		target := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode)&0o777)
		if err != nil {
			t.Fatal(err)
		}
		_, copyErr := io.Copy(f, tr)
		if err := errors.Join(copyErr, f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(fs.names)
	return fs
}

// copyReadable copies a file to dst, readable by every user, as Kubernetes
// mounts a Secret's keys (defaultMode 0644).
func copyReadable(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
