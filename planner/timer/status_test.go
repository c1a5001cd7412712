package timer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

func mustStatus(t testing.TB, ix *Index, jobKey string) (contracts.Tally, bool) {
	t.Helper()
	tallies, found, err := ix.Statuses(t.Context(), []string{jobKey})
	if err != nil {
		t.Fatal(err)
	}
	return tallies[0], found[0]
}

// keyOf returns the job key entry gives the job.
func keyOf(job string) string { return entry(job, "", t0).JobKey }

func attemptID(n int) string { return fmt.Sprintf("%08x%024x", n, n) }

func TestRecord(t *testing.T) {
	t.Parallel()

	t.Run("a result adds to the counters once, however often it is recorded", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		failed := Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Executions: 1, Failures: 1, Started: t0}
		for i := range 3 {
			recorded, err := ix.Record(t.Context(), failed)
			if err != nil {
				t.Fatal(err)
			}
			if recorded != (i == 0) {
				t.Fatalf("recording #%d reported %v", i+1, recorded)
			}
		}
		faulted := Record{JobKey: keyOf("a"), AttemptID: attemptID(2), Executions: 1, Failures: 1, Faulted: 1, Started: t0.Add(time.Minute)}
		if recorded, err := ix.Record(t.Context(), faulted); err != nil || !recorded {
			t.Fatalf("recorded %v, %v", recorded, err)
		}
		got, ok := mustStatus(t, ix, keyOf("a"))
		want := contracts.Tally{Executions: 2, Failures: 2, Faulted: 1, ConsecutiveFaults: 1, LastExecution: t0.Add(time.Minute), Recent: "0000000100000002"}
		if !ok || got != want {
			t.Fatalf("status %+v (found %v), want %+v", got, ok, want)
		}
	})

	t.Run("an attempt older than the last execution does not move it back", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		for i, at := range []time.Time{t0.Add(time.Hour), t0} {
			if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("a"), AttemptID: attemptID(i), Executions: 1, Started: at}); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := mustStatus(t, ix, keyOf("a")); !got.LastExecution.Equal(t0.Add(time.Hour)) || got.Executions != 2 {
			t.Fatalf("status %+v", got)
		}
	})

	t.Run("only the latest attempts are remembered", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		for i := range recentTags + 1 {
			if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("a"), AttemptID: attemptID(i), Executions: 1}); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ix.RecordAll(t.Context(), []Record{
			{JobKey: keyOf("a"), AttemptID: attemptID(recentTags), Executions: 1}, // the newest: remembered
			{JobKey: keyOf("a"), AttemptID: attemptID(0), Executions: 1},          // the oldest: forgotten
		})
		if err != nil {
			t.Fatal(err)
		}
		if again[0] || !again[1] {
			t.Fatalf("recorded again: %v, want [false true]", again)
		}
	})

	t.Run("the attempt that follows is scheduled with the record, and not again for a repeat", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		retry := entry("a", "r1", t0.Add(30*time.Second))
		retry.Attempt = 1
		rec := Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Executions: 1, Failures: 1, Next: &retry}
		if _, err := ix.Record(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		got, ok := mustGet(t, ix, keyOf("a"), "r1")
		if !ok {
			t.Fatal("the retry is not scheduled")
		}
		assertEntry(t, got, retry)
		// The retry is claimed and committed (published); the same result
		// delivered again must not schedule it a second time.
		c := mustClaim(t, ix, t0.Add(time.Minute), 10)
		if len(c) != 1 {
			t.Fatalf("claimed %d", len(c))
		}
		if err := ix.Commit(t.Context(), c[0], nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Record(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := mustGet(t, ix, keyOf("a"), "r1"); ok {
			t.Fatal("a repeated result scheduled its retry again")
		}
	})

	t.Run("a record of another job's entry is refused", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		other := entry("b", "r1", t0)
		if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Next: &other}); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestRecordKeepsTheLastStatus(t *testing.T) {
	t.Parallel()

	// attempt returns the record of an attempt of the main action that
	// started at start and ran for a second.
	attempt := func(n int, status string, start time.Time) Record {
		r := Record{JobKey: keyOf("a"), AttemptID: attemptID(n), Executions: 1, Started: start, Status: status, Ended: start.Add(time.Second)}
		if status != contracts.LastSucceeded {
			r.Failures = 1
		}
		if status == contracts.LastFaulted {
			r.Faulted = 1
		}
		return r
	}
	record := func(t *testing.T, ix *Index, r Record) {
		t.Helper()
		if recorded, err := ix.Record(t.Context(), r); err != nil || !recorded {
			t.Fatalf("recorded %v, %v", recorded, err)
		}
	}
	assertLast := func(t *testing.T, ix *Index, status string, at time.Time) {
		t.Helper()
		got, ok := mustStatus(t, ix, keyOf("a"))
		if !ok || got.LastStatus != status || !got.LastStatusTime.Equal(at) {
			t.Fatalf("last status %q at %v (found %v), want %q at %v", got.LastStatus, got.LastStatusTime, ok, status, at)
		}
	}

	t.Run("each attempt of the main action replaces it with how it ended", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		for i, status := range []string{contracts.LastSucceeded, contracts.LastFailed, contracts.LastFaulted} {
			start := t0.Add(time.Duration(i) * time.Minute)
			record(t, ix, attempt(i, status, start))
			assertLast(t, ix, status, start.Add(time.Second))
		}
		if got, _ := mustStatus(t, ix, keyOf("a")); got.Executions != 3 || got.Failures != 2 || got.Faulted != 1 {
			t.Fatalf("counters %+v", got)
		}
	})

	t.Run("an attempt of the error action leaves it", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		record(t, ix, attempt(1, contracts.LastFaulted, t0))
		record(t, ix, Record{JobKey: keyOf("a"), AttemptID: attemptID(2), Started: t0.Add(time.Minute), Ended: t0.Add(2 * time.Minute)})
		assertLast(t, ix, contracts.LastFaulted, t0.Add(time.Second))
	})

	t.Run("a late result of an attempt that started earlier does not overwrite it", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		record(t, ix, attempt(2, contracts.LastFailed, t0.Add(time.Hour)))
		record(t, ix, attempt(1, contracts.LastSucceeded, t0))
		assertLast(t, ix, contracts.LastFailed, t0.Add(time.Hour+time.Second))
		if got, _ := mustStatus(t, ix, keyOf("a")); got.Executions != 2 || !got.LastExecution.Equal(t0.Add(time.Hour)) {
			t.Fatalf("the late result was not counted: %+v", got)
		}
	})

	t.Run("the schedule reaching an occurrence keeps it", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		record(t, ix, attempt(1, contracts.LastFailed, t0))
		first := entry("a", "", t0.Add(time.Hour))
		first.Occurrence = 2
		mustSchedule(t, ix, first)
		for _, c := range mustClaim(t, ix, t0.Add(time.Hour), 10) {
			if err := ix.Commit(t.Context(), c, nextOf(c)); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := mustStatus(t, ix, keyOf("a")); got.Occurrence != 2 {
			t.Fatalf("the commit did not advance the occurrence: %+v", got)
		}
		assertLast(t, ix, contracts.LastFailed, t0.Add(time.Second))
	})

	t.Run("a status stored without it is read and recorded into", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		key := keyOf("a")
		old := fmt.Sprintf("3|%d|5|1|0|%d|", t0.UnixMilli(), t0.UnixMilli())
		if err := b.rdb.HSet(b.ctx, ix.keysOf(key)[keyStatus], jobID(key), old).Err(); err != nil {
			t.Fatal(err)
		}
		got, ok := mustStatus(t, ix, key)
		want := contracts.Tally{Occurrence: 3, OccurrenceTime: t0, Executions: 5, Failures: 1, LastExecution: t0}
		if !ok || got != want {
			t.Fatalf("status %+v (found %v), want %+v", got, ok, want)
		}
		record(t, ix, attempt(1, contracts.LastSucceeded, t0.Add(time.Minute)))
		assertLast(t, ix, contracts.LastSucceeded, t0.Add(time.Minute+time.Second))
		if got, _ := mustStatus(t, ix, key); got.Executions != 6 || got.Occurrence != 3 {
			t.Fatalf("the old counters were lost: %+v", got)
		}
	})

	t.Run("a status that is not one of the three is refused", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Record(t.Context(), attempt(1, "Completed", t0)); err == nil || !strings.Contains(err.Error(), `status "Completed"`) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestCommitAdvancesTheOccurrence(t *testing.T) {
	t.Parallel()
	ix, _ := setup(t, Config{})
	first := entry("a", "", t0)
	first.Occurrence = 4
	mustSchedule(t, ix, first, entry("a", "r3", t0))
	for _, c := range mustClaim(t, ix, t0, 10) {
		next := *nextOf(c)
		if c.Slot != "" {
			if err := ix.Commit(t.Context(), c, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := ix.Commit(t.Context(), c, &next); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := mustStatus(t, ix, keyOf("a"))
	if !ok || got.Occurrence != 4 || !got.OccurrenceTime.Equal(t0) {
		t.Fatalf("status %+v, want occurrence 4 at %v (a retry's commit does not count)", got, t0)
	}
	// A record of an occurrence due earlier does not move it back.
	if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Occurrence: 2, OccurrenceTime: t0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("a")); got.Occurrence != 4 {
		t.Fatalf("status %+v", got)
	}
}

func nextOf(c Claim) *Entry {
	n := c.Entry
	n.Due, n.Expected = c.Due.Add(time.Hour), c.Expected.Add(time.Hour)
	n.Occurrence++
	return &n
}

func TestRestoreStatuses(t *testing.T) {
	t.Parallel()
	ix, _ := setup(t, Config{})
	kept := Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Executions: 1, Started: t0}
	if _, err := ix.Record(t.Context(), kept); err != nil {
		t.Fatal(err)
	}
	restored := contracts.Tally{Occurrence: 9, OccurrenceTime: t0, Executions: 12, Failures: 3, Faulted: 1, LastExecution: t0.Add(time.Second),
		LastStatus: contracts.LastFaulted, LastStatusTime: t0.Add(2 * time.Second), Recent: contracts.AttemptTag(attemptID(7))}
	if err := ix.RestoreStatuses(t.Context(), map[string]contracts.Tally{keyOf("a"): {Executions: 99}, keyOf("b"): restored}); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("a")); got.Executions != 1 {
		t.Fatalf("a kept status was overwritten: %+v", got)
	}
	if got, ok := mustStatus(t, ix, keyOf("b")); !ok || got != restored {
		t.Fatalf("restored %+v, want %+v", got, restored)
	}
	// A restored status counts on from where it was, and knows the
	// attempts counted before it was lost: one delivered again is not
	// counted twice.
	if recorded, err := ix.Record(t.Context(), Record{JobKey: keyOf("b"), AttemptID: attemptID(7), Executions: 1}); err != nil || recorded {
		t.Fatalf("an attempt counted before the loss was counted again (%v)", err)
	}
	// A result of an attempt that started before the restored last
	// execution leaves the restored last status; a later one replaces it.
	if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("b"), AttemptID: attemptID(2), Executions: 1, Failures: 1,
		Started: t0, Status: contracts.LastFailed, Ended: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("b")); got.Executions != 13 || got.Failures != 4 || got.Occurrence != 9 ||
		got.LastStatus != contracts.LastFaulted || !got.LastStatusTime.Equal(restored.LastStatusTime) {
		t.Fatalf("after a late record: %+v", got)
	}
	if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("b"), AttemptID: attemptID(3), Executions: 1,
		Started: t0.Add(time.Minute), Status: contracts.LastSucceeded, Ended: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("b")); got.LastStatus != contracts.LastSucceeded || !got.LastStatusTime.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after a record: %+v", got)
	}
	if err := ix.RemoveJob(t.Context(), keyOf("b")); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustStatus(t, ix, keyOf("b")); ok {
		t.Fatal("a removed job kept its status")
	}
}

func TestRemoveAll(t *testing.T) {
	t.Parallel()
	ix, _ := setup(t, Config{Partitions: 4})
	mustSchedule(t, ix, entry("a", "", t0), entry("b", "", t0), entry("b", "r1", t0), entry("c", "", t0))
	if err := ix.RemoveAll(t.Context(), []string{keyOf("a"), keyOf("b"), keyOf("none")}, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		job, slot string
		want      bool
	}{{"a", "", false}, {"b", "", false}, {"b", "r1", true}, {"c", "", true}} {
		if _, ok := mustGet(t, ix, keyOf(c.job), c.slot); ok != c.want {
			t.Errorf("%s#%s present: %v, want %v", c.job, c.slot, ok, c.want)
		}
	}
}

// TestRecordAllTakesResultsAsOneAtATime records random results (results
// recorded twice, several of one job, some with a next attempt) with one
// RecordAll over several partitions and script calls, and one Record after
// another on a second index, and requires the same answers, statuses and
// next entries of both.
func TestRecordAllTakesResultsAsOneAtATime(t *testing.T) {
	t.Parallel()
	const jobs = 12
	for seed := range uint64(10) {
		rnd := rand.New(rand.NewPCG(seed, 2))
		all, _ := setup(t, Config{Partitions: 3, Batch: 7})
		each, _ := setup(t, Config{Partitions: 3, Batch: 7})
		var records []Record
		for range 200 {
			job := fmt.Sprint("j", rnd.IntN(jobs))
			started := t0.Add(time.Duration(rnd.IntN(100)) * time.Second)
			r := Record{
				JobKey: keyOf(job), AttemptID: attemptID(rnd.IntN(60)), Executions: 1, Started: started,
				Status: contracts.LastStatuses[rnd.IntN(len(contracts.LastStatuses))], Ended: started.Add(time.Second),
				Occurrence: rnd.Int64N(5), OccurrenceTime: started,
			}
			if r.Status != contracts.LastSucceeded {
				r.Failures = 1
			}
			if r.Status == contracts.LastFaulted {
				r.Faulted = 1
			}
			if rnd.IntN(3) == 0 {
				next := entry(job, "retry", started.Add(time.Minute))
				r.Next = &next
			}
			records = append(records, r)
		}
		got, err := all.RecordAll(t.Context(), records)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range records {
			want, err := each.Record(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != want {
				t.Fatalf("seed %d: record %d: RecordAll answered %v, Record %v", seed, i, got[i], want)
			}
		}
		for j := range jobs {
			key := keyOf(fmt.Sprint("j", j))
			gotTally, gotFound := mustStatus(t, all, key)
			wantTally, wantFound := mustStatus(t, each, key)
			if gotTally != wantTally || gotFound != wantFound {
				t.Fatalf("seed %d: %s: RecordAll left %+v (%v), Record %+v (%v)", seed, key, gotTally, gotFound, wantTally, wantFound)
			}
			gotNext, gotOK := mustGet(t, all, key, "retry")
			wantNext, wantOK := mustGet(t, each, key, "retry")
			if gotOK != wantOK || !gotNext.Due.Equal(wantNext.Due) {
				t.Fatalf("seed %d: %s: RecordAll's next %v (%v), Record's %v (%v)", seed, key, gotNext.Due, gotOK, wantNext.Due, wantOK)
			}
		}
	}
}
