package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// An occurrence of a job with a flexible window is due at its offset in the
// window and expected at its instant; published at that offset it is on
// time, so the next occurrence is the schedule's next instant, also due at
// its offset, and no catch-up policy takes it for a late one.
func TestAnOccurrenceRunsAtItsOffsetInItsFlexibleWindow(t *testing.T) {
	t.Parallel()
	const hourly = `{"frequency": "Hour", "flexibleWindow": "PT50M"}`
	for _, policy := range []contracts.CatchUpPolicy{contracts.CatchUpEarliest, contracts.CatchUpSkip, contracts.CatchUpLatest, contracts.CatchUpAll} {
		job := policyJob(t, hourly, policy, "")
		key := job.job.Ref.KVKey()
		sched := job.sched
		first, _, ok := firstEntry(job.job, sched, t0, time.Minute, contracts.Tally{})
		if !ok {
			t.Fatal("no first entry")
		}
		if !first.Expected.Equal(t0) || !first.Due.Equal(sched.Due(key, t0)) {
			t.Fatalf("%s: first entry due %s expected %s, want due %s expected %s", policy, first.Due, first.Expected, sched.Due(key, t0), t0)
		}
		// Look for an occurrence whose offset is past the missed grace.
		c := timer.Claim{Entry: first}
		for i := 0; c.Due.Sub(c.Expected) <= 2*time.Minute; i++ {
			if i > 200 {
				t.Fatal("no occurrence in 200 hours has an offset over 2 minutes")
			}
			next, skipped := planClaim(c, job, c.Due, Config{MissedGrace: time.Minute, CatchUpPace: time.Second})
			if skipped || next == nil {
				t.Fatalf("%s: the occurrence at %s published at its due time %s was skipped", policy, c.Expected, c.Due)
			}
			c = timer.Claim{Entry: *next}
		}
		next, skipped := planClaim(c, job, c.Due, Config{MissedGrace: time.Minute, CatchUpPace: time.Second})
		if skipped {
			t.Fatalf("%s: an occurrence published at its offset %s in its window was taken for a late one", policy, c.Due.Sub(c.Expected))
		}
		want := c.Expected.Add(time.Hour)
		if !next.Expected.Equal(want) || !next.Due.Equal(sched.Due(key, want)) || next.Due.Before(want) || !next.Due.Before(want.Add(50*time.Minute)) {
			t.Fatalf("%s: after %s the next entry is due %s expected %s, want expected %s due %s", policy, c.Expected, next.Due, next.Expected, want, sched.Due(key, want))
		}
	}
}

// The dispatcher compiles a job against the calendars it excludes, and
// one its collection does not hold holds no date: the job runs.
func TestJobsAreCompiledAgainstTheCalendarsTheyExclude(t *testing.T) {
	t.Parallel()
	cals := newCalendars()
	ref := collection
	holiday := store.Calendar{Collection: ref, Name: "Holidays", Properties: contracts.CalendarProperties{
		Dates: []contracts.CalendarDate{{Date: t0.AddDate(0, 0, 1).Format(time.DateOnly), Name: "a holiday"}},
	}}
	if err := cals.put(holiday); err != nil {
		t.Fatal(err)
	}
	daily := func(names ...string) store.Job {
		j := policyJob(t, `{"frequency": "Day"}`, "", "").job
		r := *j.Properties.Recurrence
		r.ExcludedCalendars = names
		j.Properties.Recurrence = &r
		return j
	}
	withHoliday, err := cals.compile(daily("holidays"), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if at, _ := withHoliday.sched.Next(t0); !at.Equal(t0.AddDate(0, 0, 2)) {
		t.Fatalf("a daily job excluding the calendar runs next at %s, want %s (the day after the holiday)", at, t0.AddDate(0, 0, 2))
	}
	missing, err := cals.compile(daily("holidays", "gone"), slog.Default())
	if err != nil {
		t.Fatalf("a job naming a calendar its collection lacks does not compile: %v", err)
	}
	if at, _ := missing.sched.Next(t0); !at.Equal(t0.AddDate(0, 0, 2)) {
		t.Fatalf("with a missing calendar besides, the job runs next at %s, want %s", at, t0.AddDate(0, 0, 2))
	}
	cals.remove(holiday.Key())
	gone, err := cals.compile(daily("holidays"), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if at, _ := gone.sched.Next(t0); !at.Equal(t0.AddDate(0, 0, 1)) {
		t.Fatalf("once the calendar is deleted the job runs next at %s, want %s", at, t0.AddDate(0, 0, 1))
	}
}

// A calendar the planner holds before it schedules the jobs excludes their
// held days, and a change of the calendar reschedules the jobs that
// exclude it at once.
func TestAChangedCalendarReschedulesTheJobsThatExcludeIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	day := func(n int) time.Time { return t0.AddDate(0, 0, n) }
	put := func(expected uint64, dates ...time.Time) uint64 {
		t.Helper()
		c := store.Calendar{Collection: collection, Name: "closed"}
		for _, d := range dates {
			c.Properties.Dates = append(c.Properties.Dates, contracts.CalendarDate{Date: d.Format(time.DateOnly)})
		}
		saved, err := e.store.PutCalendar(ctx, c, expected)
		if err != nil {
			t.Fatal(err)
		}
		return saved.Revision
	}
	rev := put(0, day(1))
	j := e.addJob(t, "daily", fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}},
		"recurrence": {"frequency": "Day", "excludedCalendars": ["Closed"]}}`, day(1).Format(time.RFC3339)))
	e.planner(t, nil)
	ix := e.index(t)
	expectNext := func(want time.Time, why string) {
		t.Helper()
		testkit.Eventually(t, 10*time.Second, func() bool {
			p, ok, _ := ix.Get(ctx, j.Ref.KVKey(), "")
			return ok && p.Expected.Equal(want)
		}, why)
	}
	expectNext(day(2), "the first occurrence is not the day after the held one")
	put(rev, day(2), day(3))
	expectNext(day(1), "the calendar's change did not reschedule the job")
}
