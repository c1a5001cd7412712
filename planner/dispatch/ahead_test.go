package dispatch

import (
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// An execution is published up to PublishAhead before it is due, carrying
// its due time for the worker to hold it until then; with PublishAhead
// negative it is published at its due time. On the real clock, with a lead
// of seconds, so that the test does not depend on how busy the machine is.
func TestExecutionsArePublishedAheadCarryingTheirDueTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ahead time.Duration
	}{
		{"ahead", 2 * time.Second},
		{"at the due time", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.realClock = true
			arrivals := watchExecutions(t, e, 1)
			due := time.Now().Add(7 * time.Second).Truncate(time.Second)
			e.addJob(t, "once", oneTimeJob(due))
			e.planner(t, func(c *Config) { c.Lookahead, c.PublishAhead = 3*time.Second, tc.ahead })

			testkit.Eventually(t, time.Until(due)+30*time.Second, func() bool { return arrivals.count() > 0 }, "no execution was published")
			a := arrivals.decoded(t)[0]
			x := a.exec
			if !x.NotBefore.Equal(due) || !x.ExpectedTime.Equal(due) {
				t.Fatalf("notBefore %s, expectedTime %s; want both the due time %s", x.NotBefore, x.ExpectedTime, due)
			}
			if x.DispatchedAt.Before(due.Add(-3 * time.Second)) {
				t.Errorf("claimed at %s, more than the lookahead before %s", x.DispatchedAt, due)
			}
			if tc.ahead < 0 {
				if a.at.Before(due) {
					t.Errorf("published %s before its due time, with PublishAhead negative", due.Sub(a.at))
				}
				return
			}
			if !a.at.Before(due) || a.at.Before(due.Add(-tc.ahead)) {
				t.Errorf("published at %s, want within %s before its due time %s", a.at, tc.ahead, due)
			}
		})
	}
}

// PublishAhead defaults to DefaultPublishAhead, and is never more than the
// lookahead.
func TestPublishAheadIsAtMostTheLookahead(t *testing.T) {
	for _, tc := range []struct{ lookahead, ahead, want time.Duration }{
		{0, 0, DefaultPublishAhead},
		{0, 3 * time.Second, DefaultLookahead},
		{2 * time.Second, 0, DefaultPublishAhead},
		{time.Second, 5 * time.Second, time.Second},
		{time.Second, 200 * time.Millisecond, 200 * time.Millisecond},
		{time.Second, -1, -1},
	} {
		got := Config{Lookahead: tc.lookahead, PublishAhead: tc.ahead}.withDefaults().PublishAhead
		if got != tc.want {
			t.Errorf("Lookahead %s, PublishAhead %s: got %s, want %s", tc.lookahead, tc.ahead, got, tc.want)
		}
		if at := publishAt(t0, got); at.After(t0) || t0.Sub(at) != max(got, 0) {
			t.Errorf("publishAt(due, %s) = due - %s", got, t0.Sub(at))
		}
	}
}

// A round that claims a full Batch is a burst: its executions are
// published as soon as they are built, up to the lookahead ahead, so that
// the workers have them in hand when they come due; a round with room to
// spare publishes PublishAhead ahead.
func TestABurstIsPublishedAsSoonAsItIsClaimed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.realClock = true
	arrivals := watchExecutions(t, e, 3)
	due := time.Now().Add(8 * time.Second).Truncate(time.Second)
	for _, name := range []string{"a", "b", "c"} {
		e.addJob(t, name, oneTimeJob(due))
	}
	const lookahead, ahead = 4 * time.Second, 500 * time.Millisecond
	e.planner(t, func(c *Config) { c.Lookahead, c.PublishAhead, c.Batch = lookahead, ahead, 2 })

	testkit.Eventually(t, time.Until(due)+30*time.Second, func() bool { return arrivals.count() == 3 }, "not every execution was published")
	var burst, rest int
	for _, a := range arrivals.decoded(t) {
		switch lead := due.Sub(a.at); {
		case lead > lookahead:
			t.Errorf("%s published %s ahead, more than the lookahead", a.exec.Job.Key(), lead)
		case lead > time.Second:
			burst++
		case lead > 0 && lead <= ahead:
			rest++
		default:
			t.Errorf("%s published %s ahead, want more than a second (a burst) or at most %s", a.exec.Job.Key(), lead, ahead)
		}
	}
	if burst != 2 || rest != 1 {
		t.Errorf("%d published with the burst and %d at PublishAhead, want 2 and 1", burst, rest)
	}
}
