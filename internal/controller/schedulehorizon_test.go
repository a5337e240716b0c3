package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

// horizonClockNamespace belongs to a manager whose clock
// TestScheduleClosesAfterARunPastTheHorizon moves.
const horizonClockNamespace = "horizon-clock"

// TestScheduleClosesAfterARunPastTheHorizon: a state open for longer than
// the operator follows a run (every minute of December, each window a
// minute long) has no nextTransitionTime at first, is looked at again every
// day, shows its end once that is in sight, and closes when December ends,
// with no restart and no change to the spec.
func TestScheduleClosesAfterARunPastTheHorizon(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	startManagerFor(t, horizonClockNamespace, rest.CopyConfig(testConfig), clk)
	state := builders.ScheduleState(horizonClockNamespace, "december").Cron("* * * 12 *", time.Minute).Obj()
	create(t, state)

	// What the state says: body, nextTransitionTime and Ready's message.
	says := func() string {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(state), state); err != nil {
			return err.Error()
		}
		next := "none"
		if state.Status.NextTransitionTime != nil {
			next = state.Status.NextTransitionTime.UTC().Format(time.RFC3339)
		}
		msg := ""
		if c := meta.FindStatusCondition(state.Status.Conditions, v1beta1.ConditionReady); c != nil {
			msg = c.Message
		}
		return state.Status.Body + " next " + next + ": " + msg
	}
	eventually(t, says).Should(Equal(`{"open":true} next none: The schedule is open with no change before 2026-12-08T00:02:00Z, ` +
		`as far as the operator looks ahead; it looks again at 2026-12-02T00:00:00Z`))

	// Each day the timer wakes the state, which looks a day further.
	for day := 2; day <= 24; day++ {
		clk.SetTime(time.Date(2026, 12, day, 0, 0, 0, 0, time.UTC))
		eventually(t, says).Should(HaveSuffix("it looks again at %s", time.Date(2026, 12, day+1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)))
	}
	clk.SetTime(time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC))
	eventually(t, says).Should(Equal(`{"open":true} next 2027-01-01T00:00:00Z: The schedule is open until 2027-01-01T00:00:00Z`))

	clk.SetTime(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	eventually(t, says).Should(Equal(`{"open":false} next 2027-12-01T00:00:00Z: The schedule is closed until 2027-12-01T00:00:00Z`))
}
