package timer

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The minutes of the executions tests are near the wall clock's: Redis
// expires each minute's key 25 hours after it began, by its own clock.
func recentMinute() time.Time { return time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute) }

var (
	collA = contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "a"}
	collB = contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "b"}
	collC = contracts.CollectionRef{Subscription: "other", ResourceGroup: "rg", Collection: "a"}
)

func mustCount(t *testing.T, ix *Index, executions ...Execution) {
	t.Helper()
	if err := ix.CountExecutions(t.Context(), executions); err != nil {
		t.Fatal(err)
	}
}

func mustCounts(t *testing.T, ix *Index, cols []contracts.CollectionRef, from, to time.Time) []MinuteExecutions {
	t.Helper()
	got, err := ix.ExecutionCounts(t.Context(), cols, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestExecutionCounts(t *testing.T) {
	t.Parallel()

	t.Run("each attempt lands in the minute it ended, by collection and outcome", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		m := recentMinute()
		mustCount(t, ix,
			Execution{Collection: collA, Ended: m},
			Execution{Collection: collA, Ended: m.Add(59 * time.Second)},
			Execution{Collection: collA, Failed: true, Ended: m.Add(30 * time.Second)},
			Execution{Collection: collB, Failed: true, Ended: m.Add(time.Second)},
			Execution{Collection: collC, Ended: m},
			Execution{Collection: collA, Failed: true, Ended: m.Add(2*time.Minute + time.Second)},
			Execution{Collection: collA, Ended: time.Time{}}, // no end: not counted
		)
		from, to := m.Add(-5*time.Minute), m.Add(5*time.Minute)
		want := []MinuteExecutions{{Minute: m, Succeeded: 2, Failed: 1}, {Minute: m.Add(2 * time.Minute), Failed: 1}}
		if got := mustCounts(t, ix, []contracts.CollectionRef{collA}, from, to); !slices.Equal(got, want) {
			t.Errorf("collection a: %+v, want %+v", got, want)
		}
		want = []MinuteExecutions{{Minute: m, Succeeded: 3, Failed: 2}, {Minute: m.Add(2 * time.Minute), Failed: 1}}
		if got := mustCounts(t, ix, []contracts.CollectionRef{collA, collB, collC}, from, to); !slices.Equal(got, want) {
			t.Errorf("every collection: %+v, want %+v", got, want)
		}
		// Names are case-insensitive, as the collections' are.
		upper := contracts.CollectionRef{Subscription: "SUB", ResourceGroup: "RG", Collection: "B"}
		want = []MinuteExecutions{{Minute: m, Failed: 1}}
		if got := mustCounts(t, ix, []contracts.CollectionRef{upper}, from, to); !slices.Equal(got, want) {
			t.Errorf("collection B: %+v, want %+v", got, want)
		}
		if got := mustCounts(t, ix, []contracts.CollectionRef{{Subscription: "sub", ResourceGroup: "rg", Collection: "none"}}, from, to); len(got) != 0 {
			t.Errorf("a collection without executions: %+v", got)
		}
		if got := mustCounts(t, ix, nil, from, to); len(got) != 0 {
			t.Errorf("no collection: %+v", got)
		}
		ttl, err := b.rdb.TTL(t.Context(), executionsKey(b.prefix, m)).Result()
		if err != nil || ttl <= 24*time.Hour || ttl > executionsKept {
			t.Errorf("the minute's key expires in %v (%v), want about 25 hours after the minute began", ttl, err)
		}
	})

	t.Run("the window holds its first minute and not the minute of its end", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		m := recentMinute()
		for i := range 5 {
			mustCount(t, ix, Execution{Collection: collA, Ended: m.Add(time.Duration(i) * time.Minute)})
		}
		got := mustCounts(t, ix, []contracts.CollectionRef{collA}, m.Add(time.Minute+30*time.Second), m.Add(3*time.Minute))
		want := []MinuteExecutions{{Minute: m.Add(time.Minute), Succeeded: 1}, {Minute: m.Add(2 * time.Minute), Succeeded: 1}}
		if !slices.Equal(got, want) {
			t.Errorf("%+v, want %+v", got, want)
		}
	})

	t.Run("counting adds to what other planners counted", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		m := recentMinute()
		mustCount(t, ix, Execution{Collection: collA, Ended: m})
		mustCount(t, b.another(t), Execution{Collection: collA, Ended: m}, Execution{Collection: collA, Failed: true, Ended: m})
		want := []MinuteExecutions{{Minute: m, Succeeded: 2, Failed: 1}}
		if got := mustCounts(t, ix, []contracts.CollectionRef{collA}, m, m.Add(time.Minute)); !slices.Equal(got, want) {
			t.Errorf("%+v, want %+v", got, want)
		}
	})

	t.Run("a window reaching past 25 hours reads no more minutes than are kept", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		m := recentMinute()
		mustCount(t, ix, Execution{Collection: collA, Ended: m})
		got := mustCounts(t, ix, []contracts.CollectionRef{collA}, m.AddDate(-10, 0, 0), m.Add(time.Minute))
		if want := []MinuteExecutions{{Minute: m, Succeeded: 1}}; !slices.Equal(got, want) {
			t.Errorf("%+v, want %+v", got, want)
		}
	})
}

// A result recorded again (delivered again) is not counted again: the
// consumer counts the results RecordAll reports recorded for the first
// time.
func TestAResultRecordedAgainIsNotCountedAgain(t *testing.T) {
	t.Parallel()
	ix, _ := setup(t, Config{})
	m := recentMinute()
	record := Record{JobKey: keyOf("a"), AttemptID: attemptID(1), Executions: 1, Failures: 1, Started: m, Ended: m}
	for range 2 {
		recorded, err := ix.RecordAll(t.Context(), []Record{record})
		if err != nil {
			t.Fatal(err)
		}
		if recorded[0] {
			mustCount(t, ix, Execution{Collection: collA, Failed: true, Ended: m})
		}
	}
	if got, want := mustCounts(t, ix, []contracts.CollectionRef{collA}, m, m.Add(time.Minute)), []MinuteExecutions{{Minute: m, Failed: 1}}; !slices.Equal(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// Under Redis Cluster the minutes' keys sit in different hash slots: one
// pipeline counts and reads them all.
func TestExecutionCountsOnARedisCluster(t *testing.T) {
	t.Parallel()
	opts, err := redis.ParseClusterURL(testkit.RedisCluster(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClusterClient(opts)
	t.Cleanup(func() { rdb.Close() })
	ix, err := New(rdb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := recentMinute()
	var executions []Execution
	var want []MinuteExecutions
	for i := range 8 {
		at := m.Add(time.Duration(i) * time.Minute)
		executions = append(executions, Execution{Collection: collA, Ended: at}, Execution{Collection: collA, Failed: i%2 == 0, Ended: at})
		me := MinuteExecutions{Minute: at, Succeeded: 2}
		if i%2 == 0 {
			me = MinuteExecutions{Minute: at, Succeeded: 1, Failed: 1}
		}
		want = append(want, me)
	}
	mustCount(t, ix, executions...)
	if got := mustCounts(t, ix, []contracts.CollectionRef{collA}, m, m.Add(8*time.Minute)); !slices.Equal(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}
