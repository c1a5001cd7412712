package timer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/redis/go-redis/v9"
)

const lease = 30 * time.Second

func mustClaim(t testing.TB, ix *Index, now time.Time, max int) []Claim {
	t.Helper()
	claims, err := ix.Claim(context.Background(), now, lease, max)
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// jobsOf returns the job names of claims, in order.
func jobsOf(claims []Claim) []string {
	var jobs []string
	for _, c := range claims {
		jobs = append(jobs, c.JobKey[len("sub/rg/coll/"):]+c.Slot)
	}
	return jobs
}

func TestClaim(t *testing.T) {
	t.Parallel()

	t.Run("only due entries are claimed, in due order", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{Partitions: 1})
		mustSchedule(t, ix,
			entry("late", "", t0.Add(time.Millisecond)),
			entry("b", "", t0.Add(-2*time.Minute)),
			entry("now", "", t0),
			entry("a", "", t0.Add(-3*time.Minute)),
			entry("c", "", t0.Add(-time.Minute)),
			entry("later", "", t0.Add(time.Hour)),
		)
		claims := mustClaim(t, ix, t0, 100)
		if got, want := fmt.Sprint(jobsOf(claims)), "[a b c now]"; got != want {
			t.Errorf("claimed %s, want %s", got, want)
		}
		for _, c := range claims {
			if c.Token == "" {
				t.Errorf("claim of %s has no token", c.JobKey)
			}
		}
	})

	t.Run("claims loop over batches and stop at max", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{Partitions: 3, Batch: 2})
		var entries []Entry
		for i := range 11 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0.Add(-time.Duration(i)*time.Second)))
		}
		mustSchedule(t, ix, entries...)
		if claims := mustClaim(t, ix, t0, 4); len(claims) != 4 {
			t.Errorf("claimed %d, want max 4", len(claims))
		}
		claims := mustClaim(t, ix, t0, 100)
		if len(claims) != 7 {
			t.Errorf("claimed %d, want the other 7", len(claims))
		}
		for i := 1; i < len(claims); i++ {
			if claims[i].Due.Before(claims[i-1].Due) {
				t.Errorf("claims are not in due order: %v", jobsOf(claims))
			}
		}
	})

	t.Run("a claimed entry is not claimed again during its lease", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		first := mustClaim(t, ix, t0, 10)
		if len(first) != 1 {
			t.Fatalf("claimed %d", len(first))
		}
		if again := mustClaim(t, b.another(t), t0.Add(lease), 10); len(again) != 0 {
			t.Errorf("claimed again during the lease: %v", jobsOf(again))
		}
		if got, ok := mustGet(t, ix, "sub/rg/coll/a", ""); !ok {
			t.Error("Get does not find the claimed entry")
		} else {
			assertEntry(t, got, entry("a", "", t0))
		}
		if n, err := ix.Reclaim(b.ctx, t0.Add(lease-time.Millisecond)); err != nil || n != 0 {
			t.Errorf("Reclaim before expiry = %d, %v", n, err)
		}
	})

	t.Run("successive claims start at different partitions", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{Partitions: 4})
		var entries []Entry
		for i := range 40 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0))
		}
		mustSchedule(t, ix, entries...)
		seen := map[int]bool{}
		for range 4 {
			for _, c := range mustClaim(t, ix, t0, 1) {
				seen[partitionOf(c.JobKey, 4)] = true
			}
		}
		if len(seen) != 4 {
			t.Errorf("four claims of one entry came from partitions %v", seen)
		}
	})

	t.Run("an id without an entry is dropped, not claimed", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{Partitions: 1})
		keys := newPartitionKeys(b.prefix, 0)
		mustSchedule(t, ix, entry("a", "", t0))
		for _, z := range []struct {
			key, id string
			state   string
		}{
			{keys[keyDue], "orphan-due", ""},
			{keys[keyDue], "garbled-due", "no bars"},
			{keys[keyInflight], "orphan-inflight", ""},
			{keys[keyInflight], "pending-inflight", "||1|"},
		} {
			if err := b.rdb.ZAdd(b.ctx, z.key, redis.Z{Score: float64(t0.UnixMilli()), Member: z.id}).Err(); err != nil {
				t.Fatal(err)
			}
			if z.state != "" {
				if err := b.rdb.HSet(b.ctx, keys[keyState], z.id, z.state).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if claims := mustClaim(t, ix, t0, 10); len(claims) != 1 || claims[0].JobKey != "sub/rg/coll/a" {
			t.Errorf("claimed %v, want only the real entry", jobsOf(claims))
		}
		if _, err := ix.Reclaim(b.ctx, t0); err != nil {
			t.Fatal(err)
		}
		if n := mustLen(t, ix); n != 1 {
			t.Errorf("Len = %d: the broken ids were kept", n)
		}
		if n := b.rdb.ZCard(b.ctx, keys[keyDue]).Val() + b.rdb.ZCard(b.ctx, keys[keyInflight]).Val(); n != 1 {
			t.Errorf("%d ids in the sorted sets, want 1", n)
		}
	})

	t.Run("a zero or negative max claims nothing", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		if claims := mustClaim(t, ix, t0, 0); len(claims) != 0 {
			t.Errorf("claimed %d", len(claims))
		}
		if claims := mustClaim(t, ix, t0, -1); len(claims) != 0 {
			t.Errorf("claimed %d", len(claims))
		}
	})

	t.Run("a lease under a millisecond is rejected", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		if _, err := ix.Claim(b.ctx, t0, 0, 10); err == nil {
			t.Error("Claim with a zero lease succeeded")
		}
	})
}

func TestCommit(t *testing.T) {
	t.Parallel()

	t.Run("commit with next stores the next occurrence", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		next := entry("a", "", t0.Add(time.Hour))
		next.Occurrence, next.Remaining = 2, 5
		if err := ix.Commit(b.ctx, c, &next); err != nil {
			t.Fatal(err)
		}
		got, _ := mustGet(t, ix, next.JobKey, "")
		assertEntry(t, got, next)
		if claims := mustClaim(t, ix, t0.Add(time.Hour-time.Millisecond), 10); len(claims) != 0 {
			t.Error("the next occurrence was claimed before it is due")
		}
		if claims := mustClaim(t, ix, t0.Add(time.Hour), 10); len(claims) != 1 || claims[0].Occurrence != 2 {
			t.Errorf("claimed %+v, want the next occurrence", claims)
		}
	})

	t.Run("commit without next deletes the entry", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "retry", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		if err := ix.Commit(b.ctx, c, nil); err != nil {
			t.Fatal(err)
		}
		if keys := b.keys(t); len(keys) != 0 {
			t.Errorf("keys left: %v", keys)
		}
	})

	t.Run("commit may move the job to another slot", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "retry", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		next := entry("a", "", t0.Add(time.Hour))
		if err := ix.Commit(b.ctx, c, &next); err != nil {
			t.Fatal(err)
		}
		if _, ok := mustGet(t, ix, "sub/rg/coll/a", "retry"); ok {
			t.Error("the committed retry is still there")
		}
		if got, ok := mustGet(t, ix, "sub/rg/coll/a", ""); !ok || !got.Due.Equal(next.Due) {
			t.Errorf("the next entry is %+v, %v", got, ok)
		}
		if err := ix.RemoveJob(b.ctx, "sub/rg/coll/a"); err != nil {
			t.Fatal(err)
		}
		if keys := b.keys(t); len(keys) != 0 {
			t.Errorf("keys left: %v", keys)
		}
	})

	t.Run("commit after a concurrent schedule keeps the newer entry", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		updated := entry("a", "", t0.Add(10*time.Minute))
		updated.Revision = 99
		mustSchedule(t, b.another(t), updated)
		stale := entry("a", "", t0.Add(time.Hour))
		if err := ix.Commit(b.ctx, c, &stale); err != nil {
			t.Fatal(err)
		}
		got, _ := mustGet(t, ix, "sub/rg/coll/a", "")
		assertEntry(t, got, updated)
		claims := mustClaim(t, ix, t0.Add(10*time.Minute), 10)
		if len(claims) != 1 || claims[0].Revision != 99 {
			t.Errorf("claimed %+v, want the rescheduled entry, pending again", claims)
		}
	})

	t.Run("a stale claim, reclaimed and claimed again by another, commits nothing", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		other := b.another(t)
		mustSchedule(t, ix, entry("a", "", t0))
		stale := mustClaim(t, ix, t0, 1)[0]
		if n, err := other.Reclaim(b.ctx, t0.Add(lease)); err != nil || n != 1 {
			t.Fatalf("Reclaim = %d, %v", n, err)
		}
		current := mustClaim(t, other, t0.Add(lease), 1)[0]
		if current.Token == stale.Token {
			t.Fatal("two claims share a token")
		}
		staleNext := entry("a", "", t0.Add(time.Hour))
		if err := ix.Commit(b.ctx, stale, &staleNext); err != nil {
			t.Fatal(err)
		}
		if err := ix.Release(b.ctx, stale); err != nil {
			t.Fatal(err)
		}
		if claims := mustClaim(t, ix, t0.Add(2*time.Hour), 10); len(claims) != 0 {
			t.Errorf("the stale commit or release freed the entry: %v", jobsOf(claims))
		}
		next := entry("a", "", t0.Add(2*time.Hour))
		next.Occurrence = 2
		if err := other.Commit(b.ctx, current, &next); err != nil {
			t.Fatal(err)
		}
		got, _ := mustGet(t, ix, "sub/rg/coll/a", "")
		assertEntry(t, got, next)
	})

	t.Run("committing twice commits once", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		next := entry("a", "", t0.Add(time.Minute))
		if err := ix.Commit(b.ctx, c, &next); err != nil {
			t.Fatal(err)
		}
		c2 := mustClaim(t, ix, t0.Add(time.Minute), 1)[0]
		later := entry("a", "", t0.Add(time.Hour))
		if err := ix.Commit(b.ctx, c, &later); err != nil {
			t.Fatal(err)
		}
		if got, _ := mustGet(t, ix, "sub/rg/coll/a", ""); !got.Due.Equal(next.Due) {
			t.Errorf("the repeated commit changed the entry to %v", got.Due)
		}
		if err := ix.Commit(b.ctx, c2, nil); err != nil {
			t.Fatal(err)
		}
		if n := mustLen(t, ix); n != 0 {
			t.Errorf("Len = %d", n)
		}
	})

	t.Run("CommitAll commits a batch of claims", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{Partitions: 3})
		var entries []Entry
		for i := range 20 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0))
		}
		mustSchedule(t, ix, entries...)
		claims := mustClaim(t, ix, t0, 100)
		completions := make([]Completion, len(claims))
		for i, c := range claims {
			completions[i] = Completion{Claim: c}
			if i%2 == 0 {
				next := entry(c.JobKey[len("sub/rg/coll/"):], "", t0.Add(time.Hour))
				completions[i].Next = &next
			}
		}
		if err := ix.CommitAll(b.ctx, completions); err != nil {
			t.Fatal(err)
		}
		if n := mustLen(t, ix); n != 10 {
			t.Errorf("Len = %d, want the 10 next occurrences", n)
		}
		if claims := mustClaim(t, ix, t0.Add(time.Hour), 100); len(claims) != 10 {
			t.Errorf("claimed %d next occurrences, want 10", len(claims))
		}
	})

	t.Run("CommitAll commits the current claims of a batch and leaves the others", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{Partitions: 1})
		mustSchedule(t, ix, entry("a", "", t0), entry("b", "", t0), entry("c", "", t0))
		claims := mustClaim(t, ix, t0, 100)
		// b is scheduled again while claimed: its claim is no longer
		// current, and its new entry must stay.
		again := entry("b", "", t0.Add(2*time.Hour))
		mustSchedule(t, ix, again)
		completions := make([]Completion, len(claims))
		for i, c := range claims {
			next := entry(c.JobKey[len("sub/rg/coll/"):], "", t0.Add(time.Hour))
			completions[i] = Completion{Claim: c, Next: &next}
		}
		if err := ix.CommitAll(b.ctx, completions); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]time.Time{"a": t0.Add(time.Hour), "b": again.Due, "c": t0.Add(time.Hour)} {
			got, ok := mustGet(t, ix, "sub/rg/coll/"+name, "")
			if !ok || !got.Due.Equal(want) {
				t.Errorf("%s is due at %v (present %v), want %v", name, got.Due, ok, want)
			}
		}
	})

	t.Run("CommitAll commits nothing when one completion is invalid", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0), entry("b", "", t0))
		claims := mustClaim(t, ix, t0, 100)
		wrongJob := entry("c", "", t0)
		err := ix.CommitAll(b.ctx, []Completion{{Claim: claims[0]}, {Claim: claims[1], Next: &wrongJob}})
		if err == nil {
			t.Fatal("CommitAll accepted a next entry of another job")
		}
		if n := mustLen(t, ix); n != 2 {
			t.Errorf("Len = %d: CommitAll committed part of an invalid batch", n)
		}
	})

	t.Run("invalid commits are rejected", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		mustSchedule(t, ix, entry("a", "", t0))
		c := mustClaim(t, ix, t0, 1)[0]
		otherJob := entry("b", "", t0)
		if err := ix.Commit(b.ctx, c, &otherJob); err == nil {
			t.Error("a next entry of another job was accepted")
		}
		if err := ix.Commit(b.ctx, c, &Entry{JobKey: c.JobKey}); err == nil {
			t.Error("an invalid next entry was accepted")
		}
		tokenless := c
		tokenless.Token = ""
		if err := ix.Commit(b.ctx, tokenless, nil); err == nil {
			t.Error("a claim without a token was accepted")
		}
		if err := ix.Release(b.ctx, tokenless); err == nil {
			t.Error("a release without a token was accepted")
		}
		if err := ix.Commit(b.ctx, Claim{Token: "x"}, nil); err != nil {
			t.Errorf("a commit of an unknown claim: %v", err)
		}
		if _, ok := mustGet(t, ix, c.JobKey, ""); !ok {
			t.Error("a rejected commit changed the entry")
		}
	})

	t.Run("an unclaimed entry cannot be committed", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		e := entry("a", "", t0)
		mustSchedule(t, ix, e)
		if err := ix.Commit(b.ctx, Claim{Entry: e, Token: "guess"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, ok := mustGet(t, ix, e.JobKey, ""); !ok {
			t.Error("a commit with a made-up token deleted the entry")
		}
	})
}

func TestReleaseAndReclaim(t *testing.T) {
	t.Parallel()

	t.Run("a released entry is due again at its original due time", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		e := entry("a", "", t0.Add(-time.Minute))
		mustSchedule(t, ix, e)
		c := mustClaim(t, ix, t0, 1)[0]
		if err := ix.Release(b.ctx, c); err != nil {
			t.Fatal(err)
		}
		if at, _, _ := ix.Earliest(b.ctx); !at.Equal(e.Due) {
			t.Errorf("Earliest = %v, want %v", at, e.Due)
		}
		again := mustClaim(t, b.another(t), t0, 1)
		if len(again) != 1 || !again[0].Due.Equal(e.Due) || again[0].Token == c.Token {
			t.Errorf("claimed %+v after the release", again)
		}
		if err := ix.Release(b.ctx, c); err != nil {
			t.Fatal(err)
		}
		if claims := mustClaim(t, ix, t0, 1); len(claims) != 0 {
			t.Error("releasing a second time freed the other planner's claim")
		}
	})

	t.Run("an expired claim is reclaimed at its original due time", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{Partitions: 2, Batch: 3})
		var entries []Entry
		for i := range 10 {
			entries = append(entries, entry(fmt.Sprint("j", i), "", t0.Add(-time.Duration(i)*time.Minute)))
		}
		mustSchedule(t, ix, entries...)
		first := mustClaim(t, ix, t0, 100)
		n, err := ix.Reclaim(b.ctx, t0.Add(lease))
		if err != nil || n != 10 {
			t.Fatalf("Reclaim = %d, %v; want 10", n, err)
		}
		if at, _, _ := ix.Earliest(b.ctx); !at.Equal(t0.Add(-9 * time.Minute)) {
			t.Errorf("Earliest = %v, want the earliest original due time", at)
		}
		again := mustClaim(t, ix, t0.Add(lease), 100)
		if len(again) != 10 {
			t.Fatalf("claimed %d after reclaiming", len(again))
		}
		for i := range again {
			if !again[i].Due.Equal(first[i].Due) {
				t.Errorf("claim %d due %v, want %v", i, again[i].Due, first[i].Due)
			}
		}
	})
}

// TestConcurrentClaimers runs planners that claim and commit entries all due
// at one instant: each entry must be claimed by exactly one of them.
func TestConcurrentClaimers(t *testing.T) {
	t.Parallel()
	const entries, planners = 10_000, 4
	ix, b := setup(t, Config{})
	all := make([]Entry, entries)
	for i := range all {
		all[i] = Entry{JobKey: fmt.Sprintf("sub/rg/coll/job-%05d", i), Due: t0, Expected: t0, Action: contracts.MainAction}
	}
	mustSchedule(t, ix, all...)

	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, planners)
	for range planners {
		p := b.another(t)
		wg.Go(func() {
			for {
				claims, err := p.Claim(b.ctx, t0, time.Hour, 100)
				if err != nil {
					errs <- err
					return
				}
				if len(claims) == 0 {
					if n, err := p.Len(b.ctx); err != nil || n == 0 {
						errs <- err
						return
					}
					continue // others still hold claims; they may release them
				}
				for _, c := range claims {
					if err := p.Commit(b.ctx, c, nil); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					claimed[c.JobKey]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(claimed) != entries {
		t.Errorf("%d entries claimed, want %d", len(claimed), entries)
	}
	for job, n := range claimed {
		if n != 1 {
			t.Errorf("%s claimed %d times", job, n)
		}
	}
	if n := mustLen(t, ix); n != 0 {
		t.Errorf("Len = %d after committing everything", n)
	}
}

// TestCommitAllTakesABatchAsSeparateCommits commits random batches, with
// two entries of one job, a claim listed twice, stale claims and nexts in
// another slot, with one CommitAll on one index and with one Commit after
// another on a second index, and requires the same entries, statuses and
// slot lists of both.
func TestCommitAllTakesABatchAsSeparateCommits(t *testing.T) {
	t.Parallel()
	slots := []string{"", "retry", "x"}
	for seed := range uint64(40) {
		rnd := rand.New(rand.NewPCG(seed, 1))
		batched, bb := setup(t, Config{Partitions: 1})
		single, sb := setup(t, Config{Partitions: 1})
		var scheduled []Entry
		for j := range 3 {
			for _, slot := range slots {
				if rnd.IntN(3) > 0 {
					e := entry(fmt.Sprint("j", j), slot, t0.Add(time.Duration(rnd.IntN(3))*time.Second))
					e.Occurrence = 1 + rnd.Int64N(3)
					scheduled = append(scheduled, e)
				}
			}
		}
		mustSchedule(t, batched, scheduled...)
		mustSchedule(t, single, scheduled...)
		claimsB := mustClaim(t, batched, t0.Add(time.Minute), 100)
		claimsS := mustClaim(t, single, t0.Add(time.Minute), 100)
		if len(claimsB) != len(claimsS) {
			t.Fatalf("seed %d: %d and %d claims", seed, len(claimsB), len(claimsS))
		}
		// Some entries are scheduled again while claimed: their claims
		// are stale.
		for _, e := range scheduled {
			if rnd.IntN(5) == 0 {
				e.Due, e.Revision = t0.Add(time.Hour), 99
				mustSchedule(t, batched, e)
				mustSchedule(t, single, e)
			}
		}
		var order []int
		for i := range claimsB {
			order = append(order, i)
			if rnd.IntN(4) == 0 {
				order = append(order, i) // listed twice
			}
		}
		rnd.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		var completions []Completion
		var nexts []*Entry
		for _, i := range order {
			var next *Entry
			if r := rnd.IntN(3); r > 0 {
				next = nextOf(claimsB[i])
				next.Due = next.Due.Add(time.Duration(rnd.IntN(1000)) * time.Millisecond)
				if r == 2 {
					next.Slot = slots[rnd.IntN(len(slots))]
				}
			}
			nexts = append(nexts, next)
			completions = append(completions, Completion{Claim: claimsB[i], Next: next})
		}
		if err := batched.CommitAll(bb.ctx, completions); err != nil {
			t.Fatal(err)
		}
		for k, i := range order {
			if err := single.Commit(sb.ctx, claimsS[i], nexts[k]); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := dump(t, batched, bb), dump(t, single, sb); got != want {
			t.Fatalf("seed %d: CommitAll left\n%s\nseparate commits left\n%s", seed, got, want)
		}
	}
}

// dump describes what ix holds for the jobs j0..j2 of a one-partition
// index: each entry, each status, the slot lists and the due set.
func dump(t *testing.T, ix *Index, b bundle) string {
	t.Helper()
	var out []string
	for j := range 3 {
		key := keyOf(fmt.Sprint("j", j))
		for _, slot := range []string{"", "retry", "x"} {
			e, ok := mustGet(t, ix, key, slot)
			out = append(out, fmt.Sprintf("%s/%s %v %+v", key, slot, ok, e))
		}
		tally, ok := mustStatus(t, ix, key)
		out = append(out, fmt.Sprintf("status %s %v %+v", key, ok, tally))
	}
	keys := ix.parts[0]
	slotLists, err := b.rdb.HGetAll(b.ctx, keys[keySlots]).Result()
	if err != nil {
		t.Fatal(err)
	}
	due, err := b.rdb.ZRangeWithScores(b.ctx, keys[keyDue], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	inflight, err := b.rdb.ZCard(b.ctx, keys[keyInflight]).Result()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("slots %v", slotLists), fmt.Sprintf("due %v", due), fmt.Sprintf("in flight %d", inflight))
	return strings.Join(out, "\n")
}
