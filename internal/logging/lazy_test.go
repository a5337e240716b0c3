package logging

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger is a zap logger as the manager's (JSON lines, the caller,
// production sampling: the first 100 lines of a message in a tick, then
// every 100th), writing without time into buf. The tick is an hour, so
// that a test never straddles two.
func zapLogger(buf *bytes.Buffer) logr.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(buf), zapcore.DebugLevel)
	core = zapcore.NewSamplerWithOptions(core, time.Hour, 100, 100)
	return zapr.NewLogger(zap.New(core, zap.AddCaller()))
}

// helper logs one line from a helper that marks itself as one.
func helper(l logr.Logger) {
	l.WithCallDepth(1).Info("Logged by a helper")
}

func TestLazyWritesWhatZapWrites(t *testing.T) {
	failed := errors.New("write failed")
	cases := []struct {
		name string
		log  func(l logr.Logger)
	}{
		{"values, then a line", func(l logr.Logger) {
			l.WithValues("controller", "dynamicingress", "namespace", "shop").Info("Created Ingress", "name", "web")
		}},
		{"values twice, a name between them, then an error", func(l logr.Logger) {
			l.WithValues("a", 1).WithName("switch").WithValues("b", 2).Error(failed, "Failed to apply", "c", 3)
		}},
		{"a dangling key is reported in its own call", func(l logr.Logger) {
			l.WithValues("dangling").WithValues("b", 2).Info("Odd values") //nolint:loggercheck // the dangling key is the case under test
		}},
		{"a key that is not a string is reported in its own call", func(l logr.Logger) {
			l.WithValues(42, "answer").WithValues("b", 2).Info("Non-string key", "c", 3)
		}},
		{"a zap field among the values is reported in its own call", func(l logr.Logger) {
			l.WithValues(zap.Int("n", 1), "x").Info("Zap field", "c", 3)
		}},
		{"a verbose line enabled, and one not", func(l logr.Logger) {
			l.WithValues("a", 1).V(1).Info("Debug line")
			l.WithValues("a", 1).V(9).Info("Not written")
		}},
		{"a line from a helper", func(l logr.Logger) {
			helper(l.WithValues("a", 1))
		}},
		{"a flip's lines, most sampled out", func(l logr.Logger) {
			for i := range 250 {
				l.WithValues("controller", "dynamicingress", "name", fmt.Sprintf("site-%03d", i)).Info("Updated Ingress", "mode", "active")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var eager, lazy bytes.Buffer
			l := zapLogger(&eager)
			tc.log(l)
			tc.log(Lazy(zapLogger(&lazy)))
			if eager.Len() == 0 {
				t.Fatal("zap wrote nothing")
			}
			if diff := cmp.Diff(eager.String(), lazy.String()); diff != "" {
				t.Errorf("lines (-zap +lazy):\n%s", diff)
			}
		})
	}
}

// recordingSink records the WithValues calls and the lines that reach it.
type recordingSink struct {
	withValues *[][]any
	lines      *[][]any
}

func (s recordingSink) Init(logr.RuntimeInfo)  {}
func (s recordingSink) Enabled(level int) bool { return level == 0 }
func (s recordingSink) Info(_ int, msg string, kv ...any) {
	*s.lines = append(*s.lines, append([]any{msg}, kv...))
}
func (s recordingSink) Error(_ error, msg string, kv ...any) {
	*s.lines = append(*s.lines, append([]any{msg}, kv...))
}
func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	*s.withValues = append(*s.withValues, kv)
	return s
}
func (s recordingSink) WithName(string) logr.LogSink { return s }

func TestLazyHandsOverValuesOnlyWithALine(t *testing.T) {
	var withValues, lines [][]any
	l := Lazy(logr.New(recordingSink{withValues: &withValues, lines: &lines}))

	perReconcile := l.WithValues("controller", "dynamicingress").WithValues("reconcileID", "1")
	perReconcile.V(1).Info("Not enabled")
	perReconcile.Info("Created Ingress", "target", "shop/web")
	perReconcile.Error(errors.New("boom"), "Failed")
	if len(withValues) != 0 {
		t.Errorf("WithValues calls reached the sink: %v", withValues)
	}
	want := [][]any{
		{"Created Ingress", "controller", "dynamicingress", "reconcileID", "1", "target", "shop/web"},
		{"Failed", "controller", "dynamicingress", "reconcileID", "1"},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines at the sink (-want +got):\n%s", diff)
	}
}

func TestLazyLoggersDoNotShareValues(t *testing.T) {
	var withValues, lines [][]any
	// Three calls deep, where a slice grown by append has room to spare.
	base := Lazy(logr.New(recordingSink{withValues: &withValues, lines: &lines})).WithValues("a", 1).WithValues("b", 2).WithValues("c", 3)
	first := base.WithValues("d", 4)
	second := base.WithValues("e", 5)
	first.Info("First")
	second.Info("Second")
	want := [][]any{{"First", "a", 1, "b", 2, "c", 3, "d", 4}, {"Second", "a", 1, "b", 2, "c", 3, "e", 5}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines at the sink (-want +got):\n%s", diff)
	}
}

func TestLazyKeepsACopyOfTheValues(t *testing.T) {
	var withValues, lines [][]any
	l := Lazy(logr.New(recordingSink{withValues: &withValues, lines: &lines}))
	kv := []any{"target", "shop/web"}
	withTarget := l.WithValues(kv...)
	kv[1] = "shop/other"
	withTarget.Info("Created Ingress")
	want := [][]any{{"Created Ingress", "target", "shop/web"}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines at the sink (-want +got):\n%s", diff)
	}
}
