package timer
import ("os";"strconv";"strings";"testing";"time";"math/rand/v2";"github.com/jobscheduler/scheduler/contracts";"github.com/jobscheduler/scheduler/internal/testkit")
func TestMemoryPerJobKV(t *testing.T) {
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
				JobKey: "j." + strings.ReplaceAll(realisticJobKey(i), "/", "."), Due: due, Expected: due, Occurrence: 1 + rng.Int64N(10_000),
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
