package timer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// BenchmarkClaimCommit claims 100,000 entries due at one instant in batches
// of 100 and commits each with its next occurrence: one Commit at a time,
// Commits from eight goroutines (a planner committing as PubAcks arrive), or
// one CommitAll per batch. It reports entries per second.
//
//	go test ./planner/timer -run '^$' -bench ClaimCommit -benchtime 3x
//	SCHEDULER_TEST_REDIS_URL=redis://127.0.0.1:6379/15 go test ./planner/timer -run '^$' -bench ClaimCommit -benchtime 3x
func BenchmarkClaimCommit(b *testing.B) {
	const entries = 100_000
	for _, mode := range []struct {
		name   string
		commit func(b *testing.B, ix *Index, claims <-chan []Claim)
	}{
		{"Commit", commitEach(1)},
		{"Commit8Goroutines", commitEach(8)},
		{"CommitAll", commitBatches},
	} {
		b.Run(mode.name, func(b *testing.B) {
			ix, _ := setup(b, Config{Batch: 100})
			due := make([]Entry, entries)
			for i := range due {
				due[i] = Entry{JobKey: realisticJobKey(i), Due: t0, Expected: t0, Occurrence: 1, Action: contracts.MainAction, Remaining: -1, Revision: uint64(i + 1)}
			}
			for range b.N {
				b.StopTimer()
				mustSchedule(b, ix, due...)
				b.StartTimer()
				if n := claimAll(b, ix, mode.commit); n != entries {
					b.Fatalf("claimed %d entries, want %d", n, entries)
				}
			}
			b.ReportMetric(float64(entries*b.N)/b.Elapsed().Seconds(), "entries/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// claimAll claims every entry due at t0 in batches of 100, hands the
// batches to commit, and returns the number of entries claimed once commit
// has returned.
func claimAll(b *testing.B, ix *Index, commit func(*testing.B, *Index, <-chan []Claim)) int {
	batches := make(chan []Claim, 10)
	var wg sync.WaitGroup
	wg.Go(func() { commit(b, ix, batches) })
	n := 0
	for {
		claims, err := ix.Claim(b.Context(), t0, time.Minute, 100)
		if err != nil {
			b.Error(err)
		}
		if len(claims) == 0 {
			break
		}
		n += len(claims)
		batches <- claims
	}
	close(batches)
	wg.Wait()
	return n
}

// following returns the occurrence after c's, an hour later.
func following(c Claim) *Entry {
	next := c.Entry
	next.Due, next.Expected, next.Occurrence = c.Due.Add(time.Hour), c.Due.Add(time.Hour), c.Occurrence+1
	return &next
}

// commitEach commits every claim with Commit, from the given number of
// goroutines.
func commitEach(goroutines int) func(*testing.B, *Index, <-chan []Claim) {
	return func(b *testing.B, ix *Index, batches <-chan []Claim) {
		claims := make(chan Claim, 100)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for c := range claims {
					if err := ix.Commit(b.Context(), c, following(c)); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for batch := range batches {
			for _, c := range batch {
				claims <- c
			}
		}
		close(claims)
		wg.Wait()
	}
}

// commitBatches commits each batch with one CommitAll.
func commitBatches(b *testing.B, ix *Index, batches <-chan []Claim) {
	for batch := range batches {
		completions := make([]Completion, len(batch))
		for i, c := range batch {
			completions[i] = Completion{Claim: c, Next: following(c)}
		}
		if err := ix.CommitAll(b.Context(), completions); err != nil {
			b.Error(err)
		}
	}
}

// TestMemoryPerJob measures the Redis memory of one scheduled entry per job.
// It runs only against a real Redis, with SCHEDULER_MEMORY_JOBS jobs:
//
//	SCHEDULER_TEST_REDIS_URL=redis://127.0.0.1:6379/15 SCHEDULER_MEMORY_JOBS=1000000 \
//	    go test ./planner/timer -run TestMemoryPerJob -v -timeout 30m
//
// It does not call t.Parallel, so the package's other tests are paused while
// it measures the server's used_memory. Its keys go when the test ends.
func TestMemoryPerJob(t *testing.T) {
	jobs, _ := strconv.Atoi(os.Getenv("SCHEDULER_MEMORY_JOBS"))
	if !testkit.RealRedis() || jobs <= 0 {
		t.Skip("set SCHEDULER_TEST_REDIS_URL and SCHEDULER_MEMORY_JOBS to measure memory on a real Redis")
	}
	ix, b := setup(t, Config{})
	before := usedMemory(t, b)

	rng := rand.New(rand.NewPCG(1, 2))
	const chunk = 10_000
	started := time.Now()
	for first := 0; first < jobs; first += chunk {
		entries := make([]Entry, 0, chunk)
		for i := first; i < min(first+chunk, jobs); i++ {
			due := t0.Add(time.Duration(rng.Int64N(int64(30*24*time.Hour))) / time.Millisecond * time.Millisecond)
			remaining := int64(-1)
			if rng.IntN(5) == 0 {
				remaining = rng.Int64N(1000)
			}
			entries = append(entries, Entry{
				JobKey: realisticJobKey(i), Due: due, Expected: due, Occurrence: 1 + rng.Int64N(10_000),
				Action: contracts.MainAction, Remaining: remaining, Revision: uint64(jobs + i),
			})
		}
		mustSchedule(t, ix, entries...)
	}
	elapsed := time.Since(started)
	if n := mustLen(t, ix); n != int64(jobs) {
		t.Fatalf("Len = %d, want %d", n, jobs)
	}
	after := usedMemory(t, b)

	var keysBytes int64
	for _, k := range b.keys(t) {
		n, err := b.rdb.MemoryUsage(b.ctx, k, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		keysBytes += n
	}
	t.Logf("%d jobs scheduled in %v (%.0f/s), sample job key %q (%d bytes)",
		jobs, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), realisticJobKey(jobs/2), len(realisticJobKey(jobs/2)))
	t.Logf("used_memory %d -> %d: %.1f bytes per job", before, after, float64(after-before)/float64(jobs))
	t.Logf("MEMORY USAGE of the index keys (SAMPLES 0): %d bytes, %.1f bytes per job", keysBytes, float64(keysBytes)/float64(jobs))
}

// usedMemory returns the server's used_memory from INFO memory.
func usedMemory(t *testing.T, b bundle) int64 {
	t.Helper()
	info, err := b.rdb.Info(b.ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// realisticJobKey returns the i-th of a deterministic set of job keys shaped
// like real ones: "<subscription GUID>/<resource group>/<collection>/<job>",
// with 200 subscriptions, a few resource groups each and many jobs per
// collection.
func realisticJobKey(i int) string {
	sub := i % 200
	rng := rand.New(rand.NewPCG(uint64(sub), 7))
	guid := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, 0x8000|rng.Uint32()&0x3fff, rng.Uint64()&0xffffffffffff)
	envs := [...]string{"prod", "staging", "dev"}
	rg := fmt.Sprintf("rg-%s-%s-%02d", envs[i%3], "westeurope", i%7)
	collection := fmt.Sprintf("jobs-%s-%03d", [...]string{"billing", "reports", "sync", "ops"}[i%4], i%97)
	return fmt.Sprintf("%s/%s/%s/job-%07d", guid, rg, collection, i)
}
