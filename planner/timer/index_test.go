package timer

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/redis/go-redis/v9"
)

// t0 is the tests' "now"; times are explicit, never the wall clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle holds what a test needs beside the Index.
type bundle struct {
	ctx    context.Context
	rdb    redis.UniversalClient
	mr     *miniredis.Miniredis // nil against a real Redis
	prefix string
	cfg    Config
}

// setup returns an Index over the test's Redis and key prefix; cfg's Prefix
// is replaced by the test's.
func setup(t testing.TB, cfg Config) (*Index, bundle) {
	t.Helper()
	rdb, prefix, mr := testkit.Redis(t)
	cfg.Prefix = prefix
	ix, err := New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix, bundle{ctx: context.Background(), rdb: rdb, mr: mr, prefix: prefix, cfg: cfg}
}

// another returns a second Index over the same Redis and prefix: another
// planner.
func (b bundle) another(t testing.TB) *Index {
	t.Helper()
	ix, err := New(b.rdb, b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// keys returns every key under the test's prefix.
func (b bundle) keys(t testing.TB) []string {
	t.Helper()
	keys, err := b.rdb.Keys(b.ctx, b.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// entry returns a valid entry of job due at due.
func entry(job, slot string, due time.Time) Entry {
	return Entry{
		JobKey: "sub/rg/coll/" + job, Slot: slot, Due: due, Expected: due,
		Occurrence: 1, Action: contracts.MainAction, Remaining: -1, Revision: 7,
	}
}

func mustSchedule(t testing.TB, ix *Index, entries ...Entry) {
	t.Helper()
	if err := ix.ScheduleAll(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
}

// mustGet returns the entry (jobKey, slot) and whether it is there.
func mustGet(t testing.TB, ix *Index, jobKey, slot string) (Entry, bool) {
	t.Helper()
	e, ok, err := ix.Get(context.Background(), jobKey, slot)
	if err != nil {
		t.Fatal(err)
	}
	return e, ok
}

func mustLen(t testing.TB, ix *Index) int64 {
	t.Helper()
	n, err := ix.Len(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func assertEntry(t testing.TB, got, want Entry) {
	t.Helper()
	if !got.Due.Equal(want.Due) || !got.Expected.Equal(want.Expected) {
		t.Errorf("times: got due %v expected %v, want %v %v", got.Due, got.Expected, want.Due, want.Expected)
	}
	got.Due, got.Expected, want.Due, want.Expected = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	rdb, _, _ := testkit.Redis(t)

	t.Run("defaults fill an empty config", func(t *testing.T) {
		t.Parallel()
		ix, err := New(rdb, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if want := (Config{Prefix: "sched", Partitions: 16, Batch: 100}); ix.cfg != want {
			t.Errorf("config %+v, want %+v", ix.cfg, want)
		}
	})
	for _, tt := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"a prefix with a brace is rejected", Config{Prefix: "a{b}"}, "Prefix"},
		{"negative partitions are rejected", Config{Partitions: -1}, "Partitions"},
		{"too many partitions are rejected", Config{Partitions: 5000}, "Partitions"},
		{"a batch above 100 is rejected", Config{Batch: 101}, "Batch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(rdb, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
			}
		})
	}
	t.Run("a nil client is rejected", func(t *testing.T) {
		t.Parallel()
		if _, err := New(nil, Config{}); err == nil {
			t.Error("New(nil) succeeded")
		}
	})
}

func TestSchedule(t *testing.T) {
	t.Parallel()

	t.Run("a scheduled entry reads back with every field", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		e := Entry{
			JobKey: "0b5c2a7e-1c1d-4f57-9a43-5d2b1e6c7f80/rg-prod/orders/nightly", Slot: "retry",
			Due: t0.Add(1500 * time.Millisecond), Expected: t0.Add(-time.Minute),
			Occurrence: 42, Attempt: 3, Action: contracts.ErrorAction, Remaining: 17, Revision: 1 << 40,
		}
		if err := ix.Schedule(b.ctx, e); err != nil {
			t.Fatal(err)
		}
		got, ok := mustGet(t, ix, e.JobKey, e.Slot)
		if !ok {
			t.Fatal("the entry is missing")
		}
		assertEntry(t, got, e)
		if _, ok := mustGet(t, ix, e.JobKey, ""); ok {
			t.Error("another slot of the job has an entry")
		}
	})

	t.Run("scheduling again replaces the entry", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		first, second := entry("j", "", t0), entry("j", "", t0.Add(time.Hour))
		second.Revision = 8
		mustSchedule(t, ix, first)
		mustSchedule(t, ix, second)
		got, _ := mustGet(t, ix, first.JobKey, "")
		assertEntry(t, got, second)
		if n := mustLen(t, ix); n != 1 {
			t.Errorf("Len = %d, want 1", n)
		}
		if at, _, _ := ix.Earliest(context.Background()); !at.Equal(second.Due) {
			t.Errorf("Earliest = %v, want %v", at, second.Due)
		}
	})

	t.Run("times are kept to the millisecond in UTC", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		e := entry("j", "", t0.Add(1234567*time.Nanosecond).In(time.FixedZone("", 3600)))
		mustSchedule(t, ix, e)
		got, _ := mustGet(t, ix, e.JobKey, "")
		if want := t0.Add(time.Millisecond); got.Due != want || got.Expected != want {
			t.Errorf("got due %v expected %v, want %v", got.Due, got.Expected, want)
		}
	})

	t.Run("invalid entries are rejected", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mutations := map[string]func(*Entry){
			"empty job key":     func(e *Entry) { e.JobKey = "" },
			"slot with a bar":   func(e *Entry) { e.Slot = "a|b" },
			"long slot":         func(e *Entry) { e.Slot = strings.Repeat("s", 65) },
			"zero due":          func(e *Entry) { e.Due = time.Time{} },
			"zero expected":     func(e *Entry) { e.Expected = time.Time{} },
			"far due":           func(e *Entry) { e.Due = time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC) },
			"unknown action":    func(e *Entry) { e.Action = "Other" },
			"empty action":      func(e *Entry) { e.Action = "" },
			"negative attempt":  func(e *Entry) { e.Attempt = -1 },
			"negative occurs":   func(e *Entry) { e.Occurrence = -1 },
			"remaining below 1": func(e *Entry) { e.Remaining = -2 },
		}
		for name, mutate := range mutations {
			e := entry("j", "", t0)
			mutate(&e)
			if err := ix.Schedule(b.ctx, e); err == nil {
				t.Errorf("%s: Schedule succeeded", name)
			}
		}
		if n := mustLen(t, ix); n != 0 {
			t.Errorf("Len = %d after rejected entries", n)
		}
	})

	t.Run("odd job keys round-trip", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		for _, key := range []string{"a|b|c", "|", "ünïcødé/ключ", "{p01}", strings.Repeat("k", 2000)} {
			e := entry("", "", t0)
			e.JobKey = key
			mustSchedule(t, ix, e)
			got, ok := mustGet(t, ix, key, "")
			if !ok {
				t.Fatalf("%q is missing", key)
			}
			assertEntry(t, got, e)
		}
	})

	t.Run("ScheduleAll stores many entries across partitions and batches", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{Partitions: 4, Batch: 7})
		var entries []Entry
		for i := range 500 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0.Add(time.Duration(i)*time.Second)))
		}
		mustSchedule(t, ix, entries...)
		if n := mustLen(t, ix); n != 500 {
			t.Errorf("Len = %d, want 500", n)
		}
		got, _ := mustGet(t, ix, entries[321].JobKey, "")
		assertEntry(t, got, entries[321])
	})
}

func TestRemove(t *testing.T) {
	t.Parallel()

	t.Run("Remove deletes one slot and leaves the others", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0), entry("a", "retry", t0), entry("a", "error", t0))
		if err := ix.Remove(b.ctx, entry("a", "", t0).JobKey, "retry"); err != nil {
			t.Fatal(err)
		}
		for slot, want := range map[string]bool{"": true, "retry": false, "error": true} {
			if _, ok := mustGet(t, ix, "sub/rg/coll/a", slot); ok != want {
				t.Errorf("slot %q present = %v, want %v", slot, ok, want)
			}
		}
	})

	t.Run("removing an absent entry is not an error", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		if err := ix.Remove(b.ctx, "nope", "x"); err != nil {
			t.Fatal(err)
		}
		if err := ix.RemoveJob(b.ctx, "nope"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RemoveJob deletes every slot of the job and nothing else", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{Partitions: 1})
		mustSchedule(t, ix, entry("a", "", t0), entry("a", "retry", t0), entry("a", "error", t0), entry("b", "", t0), entry("b", "retry", t0))
		if err := ix.RemoveJob(b.ctx, "sub/rg/coll/a"); err != nil {
			t.Fatal(err)
		}
		for _, slot := range []string{"", "retry", "error"} {
			if _, ok := mustGet(t, ix, "sub/rg/coll/a", slot); ok {
				t.Errorf("slot %q of the removed job is still there", slot)
			}
		}
		if n := mustLen(t, ix); n != 2 {
			t.Errorf("Len = %d, want the other job's 2", n)
		}
	})

	t.Run("RemoveJob deletes claimed entries too and their commit does nothing", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		e := entry("a", "retry", t0)
		mustSchedule(t, ix, e)
		claims := mustClaim(t, ix, t0, 10)
		if err := ix.RemoveJob(b.ctx, e.JobKey); err != nil {
			t.Fatal(err)
		}
		next := entry("a", "retry", t0.Add(time.Hour))
		if err := ix.Commit(b.ctx, claims[0], &next); err != nil {
			t.Fatal(err)
		}
		if n := mustLen(t, ix); n != 0 {
			t.Errorf("Len = %d: the commit resurrected a removed job", n)
		}
	})

	t.Run("removing every entry leaves no key behind", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0), entry("a", "retry", t0), entry("b", "x", t0), entry("c", "", t0))
		mustClaim(t, ix, t0, 1)
		for _, step := range []error{
			ix.RemoveJob(b.ctx, "sub/rg/coll/a"),
			ix.Remove(b.ctx, "sub/rg/coll/b", "x"),
			ix.Remove(b.ctx, "sub/rg/coll/c", ""),
		} {
			if step != nil {
				t.Fatal(step)
			}
		}
		if keys := b.keys(t); len(keys) != 0 {
			t.Errorf("keys left: %v", keys)
		}
	})
}

func TestEarliestAndLen(t *testing.T) {
	t.Parallel()

	t.Run("an empty index has no earliest time", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		if _, ok, err := ix.Earliest(b.ctx); err != nil || ok {
			t.Errorf("Earliest = %v, %v; want false", ok, err)
		}
		if n := mustLen(t, ix); n != 0 {
			t.Errorf("Len = %d", n)
		}
	})

	t.Run("Earliest is the smallest due time across partitions and skips claims", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		var entries []Entry
		for i := range 50 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0.Add(time.Duration(50-i)*time.Minute)))
		}
		mustSchedule(t, ix, entries...)
		at, ok, err := ix.Earliest(b.ctx)
		if err != nil || !ok || !at.Equal(t0.Add(time.Minute)) {
			t.Fatalf("Earliest = %v, %v, %v; want %v", at, ok, err, t0.Add(time.Minute))
		}
		mustClaim(t, ix, t0.Add(time.Minute), 10)
		if at, _, _ := ix.Earliest(b.ctx); !at.Equal(t0.Add(2 * time.Minute)) {
			t.Errorf("after claiming the earliest, Earliest = %v, want %v", at, t0.Add(2*time.Minute))
		}
		if n := mustLen(t, ix); n != 50 {
			t.Errorf("Len = %d, want 50 with the claimed one", n)
		}
	})
}

func TestBacklog(t *testing.T) {
	t.Parallel()
	ix, b := setup(t, Config{})
	var entries []Entry
	for i := range 30 {
		entries = append(entries, entry(fmt.Sprint("j", i), "", t0.Add(time.Duration(i)*time.Minute)))
	}
	mustSchedule(t, ix, entries...)
	// Due at t0+10m: j0..j10; three of them claimed.
	mustClaim(t, ix, t0.Add(2*time.Minute), 3)
	due, claimed, err := ix.Backlog(b.ctx, t0.Add(10*time.Minute))
	if err != nil || due != 8 || claimed != 3 {
		t.Errorf("Backlog = %d due, %d claimed, %v; want 8 due (11 less the 3 claimed) and 3 claimed", due, claimed, err)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()

	t.Run("every key of one job's entries shares the job's hash tag", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		job := "0b5c2a7e-1c1d-4f57-9a43-5d2b1e6c7f80/rg/coll/job"
		mustSchedule(t, ix, Entry{JobKey: job, Due: t0, Expected: t0, Action: contracts.MainAction},
			Entry{JobKey: job, Slot: "retry", Due: t0.Add(time.Hour), Expected: t0, Action: contracts.MainAction})
		mustClaim(t, ix, t0, 10) // fills the in-flight set
		keys := b.keys(t)
		if len(keys) != 4 {
			t.Fatalf("keys %v, want due, inflight, state and slots", keys)
		}
		want := fmt.Sprintf("{p%02d}", partitionOf(job, 16))
		tag := regexp.MustCompile(`\{[^}]*\}`)
		for _, k := range keys {
			if got := tag.FindString(k); got != want {
				t.Errorf("key %q has hash tag %q, want %q", k, got, want)
			}
		}
	})

	t.Run("the partition is FNV-1a of the job key", func(t *testing.T) {
		t.Parallel()
		// FNV-1a 32 of "a" is 0xe40c292c, of "" the offset basis 0x811c9dc5.
		if got := partitionOf("a", 1<<16); got != 0x292c {
			t.Errorf("partitionOf(a) = %#x", got)
		}
		if got := partitionOf("", 1000); got != 0x811c9dc5%1000 {
			t.Errorf("partitionOf('') = %d", got)
		}
	})

	t.Run("partition keys are named by prefix and tag", func(t *testing.T) {
		t.Parallel()
		k := newPartitionKeys("sched", 7)
		want := partitionKeys{"sched:{p07}:due", "sched:{p07}:inflight", "sched:{p07}:state", "sched:{p07}:slots", "sched:{p07}:status"}
		if fmt.Sprint(k) != fmt.Sprint(want) {
			t.Errorf("keys %v, want %v", k, want)
		}
	})
}

func TestGetAll(t *testing.T) {
	t.Parallel()
	ix, _ := setup(t, Config{})
	ctx := context.Background()
	a := Entry{JobKey: "j.s.r.c.a", Due: t0, Expected: t0, Occurrence: 1, Action: contracts.MainAction, Remaining: -1, Revision: 7}
	b := a
	b.JobKey, b.Revision = "j.s.r.c.b", 9
	if err := ix.ScheduleAll(ctx, []Entry{a, b}); err != nil {
		t.Fatal(err)
	}
	entries, found, err := ix.GetAll(ctx, []string{"j.s.r.c.a", "j.s.r.c.none", "j.s.r.c.b"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !found[0] || found[1] || !found[2] || entries[0].Revision != 7 || entries[2].Revision != 9 || !entries[2].Due.Equal(t0) {
		t.Fatalf("found %v, entries %+v", found, entries)
	}
}
