package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// policyJob compiles a job of the recurrence (JSON) starting at t0, with
// the catch-up policy and window, anchored at t0.
func policyJob(t testing.TB, recurrence string, policy contracts.CatchUpPolicy, window string) *cached {
	t.Helper()
	def := fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}},
		"recurrence": %s}`, t0.Format(time.RFC3339), recurrence)
	props, errs := planner.ParseJob([]byte(def), t0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	props.State, props.CatchUp, props.CatchUpWindow = contracts.JobStateEnabled, policy, window
	c, err := newCalendars().compile(store.Job{Ref: collection.Job("j"), Properties: props, Created: t0, Anchored: t0, Updated: t0, Revision: 7}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const everyMinute = `{"frequency": "Minute"}`

func at(d time.Duration) time.Time { return t0.Add(d) }

// A claimed occurrence of the schedule, more than MissedGrace late, is
// run or skipped as the job's catch-up policy says; what follows it is the
// occurrence the policy leaves next.
func TestTheDispatcherHonoursTheCatchUpPolicyOfALateOccurrence(t *testing.T) {
	t.Parallel()
	cfg := Config{MissedGrace: time.Minute, CatchUpPace: time.Second}
	claim := func(expected time.Duration, remaining int64) timer.Claim {
		return timer.Claim{Entry: timer.Entry{JobKey: "k", Slot: scheduleSlot, Due: at(expected), Expected: at(expected),
			Occurrence: 5, Action: contracts.MainAction, Remaining: remaining, Revision: 7}}
	}
	outage := 30*time.Minute + 30*time.Second // the 10m occurrence is claimed at 40m30s
	for _, tt := range []struct {
		name       string
		recurrence string
		policy     contracts.CatchUpPolicy
		window     string
		claim      timer.Claim
		now        time.Time
		skipped    bool
		// next is the entry after (or instead of) the claim: its
		// expected and due time, number and remaining; zero expected for
		// none.
		next                 time.Duration
		nextDue              time.Time
		nextOcc, nextRemains int64
	}{
		{name: "Earliest runs the late occurrence and goes on from now", policy: "", claim: claim(10*time.Minute, -1), now: at(10*time.Minute + outage),
			next: 41 * time.Minute, nextOcc: 6, nextRemains: -1},
		{name: "Earliest named runs it likewise", policy: contracts.CatchUpEarliest, claim: claim(10*time.Minute, 3), now: at(10*time.Minute + outage),
			next: 41 * time.Minute, nextOcc: 6, nextRemains: 2},
		{name: "Skip skips it for the next instant after now, keeping its number", policy: contracts.CatchUpSkip, claim: claim(10*time.Minute, 3),
			now: at(10*time.Minute + outage), skipped: true, next: 41 * time.Minute, nextOcc: 5, nextRemains: 3},
		{name: "Skip runs an occurrence within the grace", policy: contracts.CatchUpSkip, claim: claim(10*time.Minute, -1),
			now: at(10*time.Minute + 30*time.Second), next: 11 * time.Minute, nextOcc: 6, nextRemains: -1},
		{name: "Skip of the last occurrence leaves the count to the next instant", policy: contracts.CatchUpSkip, claim: claim(10*time.Minute, 0),
			now: at(10*time.Minute + outage), skipped: true, next: 41 * time.Minute, nextOcc: 5, nextRemains: 0},
		{name: "Skip after the end time leaves nothing", policy: contracts.CatchUpSkip, claim: claim(10*time.Minute, -1),
			recurrence: fmt.Sprintf(`{"frequency": "Minute", "endTime": %q}`, at(35*time.Minute).Format(time.RFC3339)),
			now:        at(10*time.Minute + outage), skipped: true},
		{name: "Latest skips it for the last instant at or before now", policy: contracts.CatchUpLatest, claim: claim(10*time.Minute, -1),
			now: at(10*time.Minute + outage), skipped: true, next: 40 * time.Minute, nextOcc: 5, nextRemains: -1},
		{name: "Latest runs the late occurrence that is the last before now", policy: contracts.CatchUpLatest, recurrence: `{"frequency": "Hour"}`,
			claim: claim(time.Hour, -1), now: at(time.Hour + 5*time.Minute), next: 2 * time.Hour, nextOcc: 6, nextRemains: -1},
		{name: "Latest after the end time runs the last instant before it", policy: contracts.CatchUpLatest, claim: claim(10*time.Minute, -1),
			recurrence: fmt.Sprintf(`{"frequency": "Minute", "endTime": %q}`, at(35*time.Minute).Format(time.RFC3339)),
			now:        at(10*time.Minute + outage), skipped: true, next: 35 * time.Minute, nextOcc: 5, nextRemains: -1},
		{name: "All runs an occurrence within the window, the next one paced", policy: contracts.CatchUpAll, claim: claim(10*time.Minute, 3),
			now: at(10*time.Minute + outage), next: 11 * time.Minute, nextDue: at(10*time.Minute + outage + time.Second), nextOcc: 6, nextRemains: 2},
		{name: "All skips an occurrence older than the window for the first within it", policy: contracts.CatchUpAll, window: "PT10M",
			claim: claim(10*time.Minute, 3), now: at(10*time.Minute + outage), skipped: true, next: 31 * time.Minute, nextOcc: 5, nextRemains: 3},
		{name: "All is back on the schedule once caught up", policy: contracts.CatchUpAll, claim: claim(40*time.Minute, -1),
			now: at(40*time.Minute - 500*time.Millisecond), next: 41 * time.Minute, nextOcc: 6, nextRemains: -1},
		{name: "All's last catch-up is followed by the next instant unpaced", policy: contracts.CatchUpAll, claim: claim(40*time.Minute, -1),
			now: at(40*time.Minute + 59*time.Second + 800*time.Millisecond), next: 41 * time.Minute, nextOcc: 6, nextRemains: -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.recurrence
			if rec == "" {
				rec = everyMinute
			}
			next, skipped := planClaim(tt.claim, policyJob(t, rec, tt.policy, tt.window), tt.now, cfg)
			if skipped != tt.skipped {
				t.Errorf("skipped %v, want %v", skipped, tt.skipped)
			}
			if tt.next == 0 {
				if next != nil {
					t.Fatalf("next %+v, want none", *next)
				}
				return
			}
			if next == nil {
				t.Fatalf("no next, want one at %s", at(tt.next))
			}
			due := tt.nextDue
			if due.IsZero() {
				due = at(tt.next)
			}
			want := timer.Entry{JobKey: "k", Slot: scheduleSlot, Due: due, Expected: at(tt.next), Occurrence: tt.nextOcc,
				Action: contracts.MainAction, Remaining: tt.nextRemains, Revision: 7}
			if *next != want {
				t.Errorf("next\n %+v, want\n %+v", *next, want)
			}
		})
	}
}

// A job (re)scheduled with its next occurrence more than MissedGrace in
// the past goes on as its catch-up policy says; under Earliest, as always,
// from the next instant after now.
func TestTheFollowerHonoursTheCatchUpPolicyOfAMissedOccurrence(t *testing.T) {
	t.Parallel()
	const grace = time.Minute
	// The tally reached occurrence 4 at 9m: the job resumes at 10m, number 5.
	tally := contracts.Tally{Occurrence: 4, OccurrenceTime: at(9 * time.Minute)}
	for _, tt := range []struct {
		name    string
		policy  contracts.CatchUpPolicy
		window  string
		now     time.Time
		first   time.Duration
		skipped bool
	}{
		{name: "Earliest runs none it missed", policy: "", now: at(40*time.Minute + 30*time.Second), first: 41 * time.Minute},
		{name: "Earliest named runs none it missed", policy: contracts.CatchUpEarliest, now: at(40*time.Minute + 30*time.Second), first: 41 * time.Minute},
		{name: "Skip runs none it missed", policy: contracts.CatchUpSkip, now: at(40*time.Minute + 30*time.Second), first: 41 * time.Minute, skipped: true},
		{name: "Latest runs the last missed instant", policy: contracts.CatchUpLatest, now: at(40*time.Minute + 30*time.Second), first: 40 * time.Minute, skipped: true},
		{name: "All starts at the first missed instant within the window", policy: contracts.CatchUpAll, now: at(40*time.Minute + 30*time.Second), first: 10 * time.Minute},
		{name: "All skips the missed instants older than the window", policy: contracts.CatchUpAll, window: "PT10M", now: at(40*time.Minute + 30*time.Second),
			first: 31 * time.Minute, skipped: true},
		{name: "an occurrence within the grace runs under every policy", policy: contracts.CatchUpSkip, now: at(10*time.Minute + 30*time.Second), first: 10 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := policyJob(t, everyMinute, tt.policy, tt.window)
			got, skipped, ok := firstEntry(job.job, job.sched, tt.now, grace, tally)
			if !ok {
				t.Fatal("no first entry")
			}
			want := timer.Entry{JobKey: job.job.Ref.KVKey(), Slot: scheduleSlot, Due: at(tt.first), Expected: at(tt.first), Occurrence: 5,
				Action: contracts.MainAction, Remaining: -1, Revision: 7}
			if got != want {
				t.Errorf("first entry\n %+v, want\n %+v", got, want)
			}
			switch {
			case tt.skipped && (skipped == nil || !skipped.Expected.Equal(at(10*time.Minute))):
				t.Errorf("skipped %+v, want the occurrence at 10m", skipped)
			case !tt.skipped && skipped != nil:
				t.Errorf("skipped %+v, want none", *skipped)
			}
		})
	}
}

// The latest missed instant is found by walking the schedule forward; a
// walk that does not reach now within its bound gives up, and the job then
// goes on from its next instant, as under Skip.
func TestLatestMissedWalksForwardWithinItsBound(t *testing.T) {
	t.Parallel()
	weekly := policyJob(t, `{"frequency": "Week", "schedule": {"weekDays": ["Monday"], "hours": [9], "minutes": [0]}}`, contracts.CatchUpLatest, "")
	first, _ := weekly.sched.First()
	now := first.Add(3*7*24*time.Hour + 2*time.Hour) // three weeks later, 11:00 on a Monday
	got, ok := latestMissed(weekly.sched, first, now, catchUpSteps)
	if want := first.Add(3 * 7 * 24 * time.Hour); !ok || !got.Equal(want) {
		t.Errorf("latest missed %v (%v), want %v", got, ok, want)
	}
	minutely := policyJob(t, everyMinute, contracts.CatchUpLatest, "")
	if _, ok := latestMissed(minutely.sched, at(time.Minute), at(time.Hour+30*time.Second), 0); ok {
		t.Error("a walk of no steps reached now")
	}
	if got, ok := latestMissed(minutely.sched, at(time.Minute), at(time.Hour+30*time.Second), 1); !ok || !got.Equal(at(time.Hour)) {
		t.Errorf("after the jump near now, latest missed %v (%v), want 1h", got, ok)
	}
	// The bound is hit: the job goes on from its next instant.
	if got, ok := nextAfterNow(minutely.sched, at(time.Minute), at(time.Hour+30*time.Second)); !ok || !got.Equal(at(61*time.Minute)) {
		t.Errorf("the fallback %v, want 1h01m", got)
	}
}

// Property: after an outage of any length, of any schedule, each policy
// runs no more of the missed occurrences than it allows (Skip none, Earliest
// and Latest one, All those within the window), never one early, never an
// instant twice, each at an instant of the schedule, numbered on from the
// occurrence reached; whether the dispatcher claims the late occurrence or
// the Follower schedules the job again.
func TestCatchUpNeverRunsMoreThanThePolicyAllows(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 23))
	recurrences := []string{
		everyMinute,
		`{"frequency": "Minute", "interval": 7}`,
		`{"frequency": "Hour", "interval": 2}`,
		`{"frequency": "Hour", "schedule": {"minutes": [0, 20, 45]}}`,
		`{"frequency": "Day", "schedule": {"hours": [9, 17], "minutes": [30]}}`,
		`{"frequency": "Week", "schedule": {"weekDays": ["Monday", "Friday"], "hours": [8], "minutes": [0]}}`,
		`{"frequency": "Month", "schedule": {"monthDays": [1, -1]}}`,
	}
	policies := []contracts.CatchUpPolicy{"", contracts.CatchUpSkip, contracts.CatchUpLatest, contracts.CatchUpAll}
	windows := []string{"", "PT1H", "PT6H", "P3D"}
	cfg := Config{MissedGrace: time.Minute, CatchUpPace: time.Second}
	for i := range 400 {
		rec, policy, window := recurrences[rng.IntN(len(recurrences))], policies[rng.IntN(len(policies))], windows[rng.IntN(len(windows))]
		job := policyJob(t, rec, policy, window)
		// The planners stop after occurrence k; they come back at back.
		k := 1 + rng.IntN(20)
		instants := job.sched.Upcoming(k + 1)
		if len(instants) < k+1 {
			continue
		}
		missed := instants[k] // occurrence k+1, the first missed
		back := missed.Add(time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))
		viaFollower := rng.IntN(2) == 0
		name := fmt.Sprintf("case %d: %s, catchUp %q window %q, back %s after the missed %s, follower %v", i, rec, policy, window, back.Sub(missed), missed, viaFollower)

		var entry *timer.Entry
		if viaFollower {
			e, _, ok := firstEntry(job.job, job.sched, back, cfg.MissedGrace, contracts.Tally{Occurrence: int64(k), OccurrenceTime: instants[k-1]})
			if !ok {
				continue
			}
			entry = &e
		} else {
			entry = &timer.Entry{JobKey: "k", Slot: scheduleSlot, Due: missed, Expected: missed, Occurrence: int64(k + 1),
				Action: contracts.MainAction, Remaining: -1, Revision: 7}
		}
		// Dispatch until the job is back on its schedule: each entry is
		// claimed when it is due, not before the planners are back.
		now := back
		var (
			ran       []timer.Entry
			published []time.Time
		)
		for step := 0; entry != nil && !entry.Expected.After(back); step++ {
			if step > 100_000 {
				t.Fatalf("%s: no end to the catch-up", name)
			}
			if entry.Due.After(now) {
				now = entry.Due
			}
			if entry.Due.Before(entry.Expected) {
				t.Fatalf("%s: entry %+v is due before its instant", name, *entry)
			}
			c := timer.Claim{Entry: *entry}
			next, skipped := planClaim(c, job, now, cfg)
			if !skipped {
				if now.Before(c.Expected) {
					t.Fatalf("%s: %s ran early, at %s", name, c.Expected, now)
				}
				ran, published = append(ran, c.Entry), append(published, now)
			}
			entry = next
		}
		late := 0
		allowed := 0
		switch policy {
		case "", contracts.CatchUpLatest:
			allowed = 1
		case contracts.CatchUpAll:
			for _, at := range instantsBetween(job.sched, missed, back) {
				if !at.Before(back.Add(-catchUpWindow(&job.job.Properties))) && at.Before(back.Add(-cfg.MissedGrace)) {
					allowed++
				}
			}
		}
		if viaFollower && policy == "" {
			allowed = 0 // a job scheduled again runs none it missed
		}
		for j, r := range ran {
			if r.Expected.Before(back.Add(-cfg.MissedGrace)) {
				late++
			}
			if next, ok := job.sched.Next(r.Expected.Add(-time.Second)); !ok || !next.Equal(r.Expected) {
				t.Fatalf("%s: ran %s, not an instant of the schedule", name, r.Expected)
			}
			if r.Occurrence != int64(k+1+j) {
				t.Fatalf("%s: run %d is occurrence %d, want %d (skipped instants do not count)", name, j, r.Occurrence, k+1+j)
			}
			if j > 0 && !r.Expected.After(ran[j-1].Expected) {
				t.Fatalf("%s: %s ran after %s", name, r.Expected, ran[j-1].Expected)
			}
			if j > 0 && r.Expected.Before(back) && published[j].Sub(published[j-1]) < cfg.CatchUpPace {
				t.Fatalf("%s: catch-up runs %s and %s published %s apart, closer than the pace", name, ran[j-1].Expected, r.Expected, published[j].Sub(published[j-1]))
			}
		}
		if late > allowed {
			t.Fatalf("%s: %d missed occurrences ran, the policy allows %d", name, late, allowed)
		}
	}
}

// instantsBetween returns the schedule's instants in [from, to].
func instantsBetween(sched *planner.Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for t, ok := sched.Next(from.Add(-time.Nanosecond)); ok && !t.After(to); t, ok = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

// skipRecorder records the occurrences skipped.
type skipRecorder struct {
	mu      sync.Mutex
	skipped []events.Skipped
}

func (r *skipRecorder) Dispatched(events.Dispatched) {}

func (r *skipRecorder) Skipped(s events.Skipped) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped = append(r.skipped, s)
}

func (r *skipRecorder) all() []events.Skipped {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.skipped)
}

// policyMinuteJob is minuteJob with a catch-up policy.
func policyMinuteJob(start time.Time, policy contracts.CatchUpPolicy) string {
	field := ""
	if policy != "" {
		field = fmt.Sprintf(`"catchUp": %q, `, policy)
	}
	return fmt.Sprintf(`{"startTime": %q, %s"action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}},
		"recurrence": {"frequency": "Minute"}}`, start.Format(time.RFC3339), field)
}

// ran returns, by job, the occurrence number and expected time of each
// execution, in the order published.
func (e *env) ran(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, x := range e.executions(t) {
		out[x.Job.Job] = append(out[x.Job.Job], fmt.Sprintf("%d@%s", x.Occurrence, x.ExpectedTime.Sub(t0)))
	}
	return out
}

// Planners back from an outage that kept the timer claim each job's late
// occurrence and catch up as its policy says.
func TestPlannersBackFromAnOutageCatchUpAsEachJobSays(t *testing.T) {
	t.Parallel()
	e := setup(t)
	jobs := map[string]contracts.CatchUpPolicy{"earliest": "", "skip": contracts.CatchUpSkip, "latest": contracts.CatchUpLatest, "all": contracts.CatchUpAll}
	for name, policy := range jobs {
		e.addJob(t, name, policyMinuteJob(t0.Add(time.Minute), policy))
	}
	a := e.planner(t, nil)
	e.clock.Set(t0.Add(time.Minute))
	a.Wake()
	e.waitCount(t, len(jobs))
	ix := e.index(t)
	for name := range jobs {
		testkit.Eventually(t, 10*time.Second, func() bool {
			next, ok, _ := ix.Get(context.Background(), collection.Job(name).KVKey(), "")
			return ok && next.Occurrence == 2
		}, "occurrence 1 of %s was not committed", name)
	}
	a.Stop() // the planners are down from 1m to 5m30s: 2m, 3m, 4m and 5m are missed

	e.clock.Set(t0.Add(5*time.Minute + 30*time.Second))
	skips := &skipRecorder{}
	b := e.planner(t, func(c *Config) { c.Observer = skips })
	b.Wake()
	// All's runs come one per pace: the clock moves to each as it is due.
	testkit.Eventually(t, 30*time.Second, func() bool {
		if due, ok, err := ix.Earliest(context.Background()); err == nil && ok && due.After(e.clock.Now()) && due.Before(t0.Add(6*time.Minute)) {
			if due.Sub(e.clock.Now()) != time.Second {
				t.Errorf("the next catch-up run is due %s after the last, not a pace (1s)", due.Sub(e.clock.Now()))
			}
			e.clock.Set(due)
			b.Wake()
		}
		return e.count(t) >= 10
	}, "executions, want 10")
	want := map[string][]string{
		"earliest": {"1@1m0s", "2@2m0s"},
		"skip":     {"1@1m0s"},
		"latest":   {"1@1m0s", "2@5m0s"},
		"all":      {"1@1m0s", "2@2m0s", "3@3m0s", "4@4m0s", "5@5m0s"},
	}
	if got := e.ran(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the outage ran\n %v, want\n %v", got, want)
	}
	var skipped []string
	for _, s := range skips.all() {
		skipped = append(skipped, fmt.Sprintf("%s %s %s", s.JobKey, s.Expected.Sub(t0), s.Reason))
	}
	slices.Sort(skipped)
	if want := []string{"j.sub.rg.jc.latest 2m0s catch-up", "j.sub.rg.jc.skip 2m0s catch-up"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}

	// Back on the schedule: each job runs at 6m, numbered on.
	e.clock.Set(t0.Add(6 * time.Minute))
	b.Wake()
	e.waitCount(t, 14)
	got := e.ran(t)
	for job, last := range map[string]string{"earliest": "3@6m0s", "skip": "2@6m0s", "latest": "3@6m0s", "all": "6@6m0s"} {
		if runs := got[job]; runs[len(runs)-1] != last {
			t.Errorf("%s ran %v, want %s last", job, runs, last)
		}
	}
}

// A job enabled again with its anchor kept (its catch-up policy is not
// Earliest) catches up the instants it missed while disabled.
func TestAJobEnabledAgainCatchesUpAsItsPolicySays(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, nil)
	j := e.addJob(t, "latest", policyMinuteJob(t0.Add(time.Minute), contracts.CatchUpLatest))
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	e.waitCount(t, 1)
	j, err := e.store.GetJob(ctx, j.Ref)
	if err != nil {
		t.Fatal(err)
	}
	j.Properties.State = contracts.JobStateDisabled
	if j, err = e.store.UpdateJob(ctx, j, j.Revision); err != nil {
		t.Fatal(err)
	}
	ix := e.index(t)
	testkit.Eventually(t, 5*time.Second, func() bool { _, ok, _ := ix.Get(ctx, j.Ref.KVKey(), ""); return !ok }, "still scheduled when disabled")
	e.clock.Set(t0.Add(10*time.Minute + 30*time.Second))
	j.Properties.State = contracts.JobStateEnabled
	j.Updated = e.clock.Now()
	if _, err := e.store.UpdateJob(ctx, j, j.Revision); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		p, ok, _ := ix.Get(ctx, j.Ref.KVKey(), "")
		return ok && p.Expected.Equal(t0.Add(10*time.Minute))
	},
		"not scheduled at the latest missed instant, 10m")
	e.clock.Advance(time.Second) // past the settle delay
	d.Wake()
	e.waitCount(t, 2)
	if got := e.ran(t)["latest"]; !slices.Equal(got, []string{"1@1m0s", "2@10m0s"}) {
		t.Fatalf("ran %v, want the latest missed instant, 10m, as occurrence 2", got)
	}
}
