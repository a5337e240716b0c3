package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// collectAPIServerGarbage has kube-apiserver run a garbage collection
// (its heap profile with gc=1, thrown away) before a flip, untimed, so
// that every writer starts owing no collection for what came before:
// otherwise the writes before a flip are partly paid for by it, and in the
// rotation the operator's flip to passive always follows the statuses and
// events of its own flip to active (docs/benchmarks.md). Call it last
// before the clock starts: whatever a writer's flip asks of kube-apiserver
// in between (a scrape of its metrics allocates megabytes) is paid for
// inside the flip, and the other writers do not ask it.
// BENCH_APISERVER_GC=0 leaves it out.
func (b *bench) collectAPIServerGarbage(ctx context.Context) error {
	if os.Getenv("BENCH_APISERVER_GC") == "0" {
		return nil
	}
	_, err := b.h.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("a garbage collection of kube-apiserver (GET /debug/pprof/heap?gc=1): %w", err)
	}
	return nil
}

// profileAPIServer takes a CPU profile of kube-apiserver over the next
// BENCH_PROFILE_SECONDS (default 1) seconds into the directory named by
// BENCH_PROFILE, as name-<time>.pb.gz, to see where the API server's time
// goes in one kind of flip (go tool pprof -proto dir/operator-* > op.pb.gz).
// The returned function waits for the profile. Without BENCH_PROFILE it
// does nothing.
func (b *bench) profileAPIServer(ctx context.Context, name string) func() {
	return b.profile(name, func(seconds string) ([]byte, error) {
		return b.h.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).DoRaw(ctx)
	})
}

// profileManager does the same for the manager, when it serves Go's
// profiles (the harness turns them on with BENCH_PROFILE).
func (b *bench) profileManager(m *managerProc, name string) func() {
	if m.pprofURL == "" {
		return func() {}
	}
	return b.profile(name, func(seconds string) ([]byte, error) {
		resp, err := http.Get(m.pprofURL + "/profile?seconds=" + seconds)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", m.pprofURL, resp.Status)
		}
		return io.ReadAll(resp.Body)
	})
}

// profile runs get, for a profile of BENCH_PROFILE_SECONDS (default 1), in
// the background and writes what it returns into the BENCH_PROFILE
// directory; the returned function waits for it. Without BENCH_PROFILE it
// does nothing.
func (b *bench) profile(name string, get func(seconds string) ([]byte, error)) func() {
	dir := os.Getenv("BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	seconds := os.Getenv("BENCH_PROFILE_SECONDS")
	if seconds == "" {
		seconds = "1"
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := get(seconds)
		if err != nil {
			b.progress("profile %s: %v", name, err)
			return
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.pb.gz", strings.ReplaceAll(name, " ", "-"), time.Now().UnixNano()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.progress("profile %s: %v", name, err)
			return
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			b.progress("profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}

// runRound runs the writers of round rep, each once the API server has seen
// no write for a while, starting at writer rep: the order rotates from round
// to round, so that no writer always follows the heaviest one.
func (b *bench) runRound(ctx context.Context, rep int, steps []func() error) error {
	for i := range steps {
		if _, err := b.waitQuiet(ctx, b.cfg.quiet, 20*time.Second); err != nil {
			return err
		}
		if err := steps[(i+rep)%len(steps)](); err != nil {
			return err
		}
	}
	return nil
}
