package worker

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// An execution received ahead of its due time is held until then and
// performed at it, never earlier; its result starts no earlier either.
func TestAnExecutionReceivedAheadIsPerformedAtItsDueTime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec, obs := newRecorder(), newObserver()
	e.worker(t, rec, func(c *Config) { c.Observer = obs })
	due := time.Now().Add(time.Second)
	e.execution(t, 1, func(x *contracts.Execution) { x.NotBefore = due })

	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
	if at := rec.first(); at.Before(due) {
		t.Fatalf("performed %s before its due time", due.Sub(at))
	}
	if r := e.results(t)[0].Data; r.StartTime.Before(due) {
		t.Errorf("the result starts at %s, before the due time %s", r.StartTime, due)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.maxHeld != 1 || obs.held != 0 {
		t.Errorf("held at most %d, %d still held; want 1 and 0", obs.maxHeld, obs.held)
	}
}

// A worker holds executions due later beside its Concurrency, up to Hold,
// so that those due at one instant are all in hand when it comes; with no
// Hold, they wait in its Concurrency slots.
func TestAWorkerHoldsExecutionsDueLaterBesideItsConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		hold     int
		wantHeld int
	}{
		{"with a hold of 8", 8, 5},
		{"with no hold", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			e.ensureStreams(t)
			rec, obs := newRecorder(), newObserver()
			w, _ := e.worker(t, rec, func(c *Config) { c.Observer, c.Concurrency, c.Hold = obs, 1, tc.hold })
			due := time.Now().Add(2 * time.Second)
			for i := range 5 {
				e.execution(t, i+1, func(x *contracts.Execution) { x.NotBefore = due })
			}
			testkit.Eventually(t, 20*time.Second, func() bool { return len(e.results(t)) == 5 }, "not every execution was performed")
			rec.mu.Lock()
			for i, at := range rec.at {
				if at.Before(due) {
					t.Errorf("attempt %d performed %s before its due time", i, due.Sub(at))
				}
			}
			rec.mu.Unlock()
			obs.mu.Lock()
			if obs.maxHeld != tc.wantHeld {
				t.Errorf("held at most %d at once, want %d", obs.maxHeld, tc.wantHeld)
			}
			obs.mu.Unlock()
			if n := len(w.holds); n != 0 {
				t.Errorf("%d hold tokens still taken", n)
			}
		})
	}
}

// A stopping worker hands back at once what it holds, without waiting for
// its drain timeout, and another worker performs it at its due time, long
// before the ack wait of the first delivery runs out: nothing handed back
// goes to the stopping worker's own pull request, where nobody would read
// it any more.
func TestAStoppingWorkerHandsBackWhatItHolds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	const ackWait, n = time.Minute, 20
	first, obs := newRecorder(), newObserver()
	// Its pull request stays open for more than it holds.
	w, _ := e.worker(t, first, func(c *Config) {
		c.Observer, c.DrainTimeout, c.AckWait, c.Concurrency = obs, time.Minute, ackWait, 4*n
	})
	due := time.Now().Add(5 * time.Second)
	for i := range n {
		e.execution(t, i+1, func(x *contracts.Execution) { x.NotBefore = due })
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.held == n
	}, "the worker did not hold the executions")

	stopped := make(chan struct{})
	go func() {
		w.Stop(context.Background())
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop waited for a held execution instead of handing it back")
	}
	second := newRecorder()
	e.worker(t, second, func(c *Config) { c.AckWait = ackWait })
	testkit.Eventually(t, ackWait/3, func() bool { return len(e.results(t)) == n },
		"%d of %d executions handed back were performed", second.count(), n)
	if first.count() != 0 {
		t.Errorf("the stopped worker performed %d", first.count())
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	for i, at := range second.at {
		if at.Before(due) {
			t.Errorf("attempt %d performed %s before its due time", i, due.Sub(at))
		}
	}
}

// streamCounter is a Sender that notes, at each call, how many results
// RESULTS holds; the first call waits for release.
type streamCounter struct {
	t       *testing.T
	e       *env
	release chan struct{}
	mu      sync.Mutex
	seen    []uint64
}

func (s *streamCounter) Send(ctx context.Context, _ *contracts.JobAction, _ actions.Attempt) actions.Outcome {
	st, err := s.e.js.Stream(ctx, contracts.ResultsStream)
	if err != nil {
		s.t.Error(err)
		return actions.Failure("no stream", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		s.t.Error(err)
		return actions.Failure("no stream info", err)
	}
	s.mu.Lock()
	s.seen = append(s.seen, info.State.Msgs)
	first := len(s.seen) == 1
	s.mu.Unlock()
	if first {
		select {
		case <-s.release:
		case <-ctx.Done(): // the test failed and stops the worker
			return actions.Failure("cancelled", ctx.Err())
		}
	}
	return actions.Outcome{Succeeded: true, StatusCode: 200}
}

func (s *streamCounter) Close() error { return nil }

// holdThreeDue starts a worker that holds three executions due at once
// and performs them one at a time with a streamCounter, and returns it
// and the sender once the first call started and the three came due: the
// first call waits for release, and the other two wait to be sent
// meanwhile.
func (e *env) holdThreeDue(t *testing.T) (*Worker, *streamCounter) {
	t.Helper()
	sender := &streamCounter{t: t, e: e, release: make(chan struct{})}
	w, _ := e.worker(t, sender, func(c *Config) { c.Concurrency, c.Hold = 1, 8 })
	due := time.Now().Add(1500 * time.Millisecond)
	for i := range 3 {
		e.execution(t, i+1, func(x *contracts.Execution) { x.NotBefore = due })
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		sender.mu.Lock()
		defer sender.mu.Unlock()
		return len(sender.seen) == 1
	}, "the first execution was not performed")
	testkit.Eventually(t, 10*time.Second, func() bool {
		w.due.mu.Lock()
		defer w.due.mu.Unlock()
		return w.due.n == 3
	}, "the three executions did not all come due")
	return w, sender
}

// releaseAndCheck releases the first call, waits for results results,
// and fails the test if a call found a result stored before it.
func (s *streamCounter) releaseAndCheck(results int, why string) {
	s.t.Helper()
	close(s.release)
	testkit.Eventually(s.t, 10*time.Second, func() bool { return len(s.e.results(s.t)) == results }, "not every result was stored")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.seen {
		if n != 0 {
			s.t.Errorf("call %d found %d results stored: %s", i+1, n, why)
		}
	}
}

// The executions held until one due time go first: the result of one
// already performed waits, without its slot, until the others due with it
// were sent, so that the calls due now are not slowed by the work each
// result causes.
func TestResultsWaitForTheExecutionsDueNow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	_, sender := e.holdThreeDue(t)
	sender.releaseAndCheck(3, "a result went before an execution due with it")
}

// With two workers, the result of an action one of them performed also
// waits while the other has executions due now to send: the calls due at
// one instant go first, whichever worker holds them.
func TestResultsWaitForTheExecutionsDueNowOnAnotherWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	first, sender := e.holdThreeDue(t)
	// The first worker fetches no more: its held executions are performed
	// without its slot, which would take the execution meant for the
	// second.
	first.stopPull()
	<-first.pulled

	// The second worker performs an execution due already; its result
	// waits, or is stored at once when it does not.
	rec, obs := newRecorder(), newObserver()
	second, _ := e.worker(t, rec, func(c *Config) { c.Observer = obs })
	testkit.Eventually(t, 5*time.Second, func() bool { return second.peers.waiting() != nil },
		"the second worker did not hear that the first has executions due")
	e.execution(t, 4, nil)
	testkit.Eventually(t, 10*time.Second, func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.keptBack == 1 || len(e.results(t)) == 1
	}, "the second worker's execution was not performed")
	sender.releaseAndCheck(4, "the other worker's result went before an execution due now")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.kept != 1 {
		t.Errorf("the second worker kept %d results back, want 1", obs.kept)
	}
}

// Executions delivered due already, with more waiting behind them in the
// stream (a burst larger than the workers could hold), go first too: the
// result of one performed waits while the others delivered with it wait
// to be sent.
func TestResultsWaitForTheExecutionsDueBehindThem(t *testing.T) {
	t.Parallel()
	// The first call waits for release; the second ends, and its result
	// waits without its slot, in which the third is performed.
	sender := performThreeDue(t, 2, -1, 3)
	sender.releaseAndCheck(3, "a result went before an execution delivered due with more behind it")
}

// performThreeDue publishes three executions due already, then starts a
// worker with the given Concurrency and Hold that performs them with a
// streamCounter, and returns the sender once calls calls started (the
// first waits for release).
func performThreeDue(t *testing.T, concurrency, hold, calls int) *streamCounter {
	t.Helper()
	e := setup(t)
	e.ensureStreams(t)
	for i := range 3 {
		e.execution(t, i+1, nil) // due already, before any worker runs
	}
	sender := &streamCounter{t: t, e: e, release: make(chan struct{})}
	e.worker(t, sender, func(c *Config) { c.Concurrency, c.Hold = concurrency, hold })
	testkit.Eventually(t, 10*time.Second, func() bool {
		sender.mu.Lock()
		defer sender.mu.Unlock()
		return len(sender.seen) == calls
	}, "the worker did not start %d calls", calls)
	return sender
}

// jumpingClock reads the real time plus an offset that jump adds to: a
// worker paused for that long, as far as its ack waits go.
type jumpingClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *jumpingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *jumpingClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// heldObserver jumps its clock the first time the worker holds an
// execution.
type heldObserver struct {
	*observer
	clock *jumpingClock
	by    time.Duration
	once  sync.Once
}

func (o *heldObserver) Held(delta int) {
	if delta > 0 {
		o.once.Do(func() { o.clock.jump(o.by) })
	}
	o.observer.Held(delta)
}

// A worker paused while it held an execution past the execution's ack
// wait does not perform it once due: JetStream may have delivered it to
// another worker meanwhile. It skips it as stale.
func TestAnExecutionHeldPastItsAckWaitIsSkipped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	clock := &jumpingClock{}
	obs := &heldObserver{observer: newObserver(), clock: clock, by: 10 * time.Second}
	e.worker(t, rec, func(c *Config) { c.Observer, c.AckWait, c.clock = obs, 3*time.Second, clock.now })
	e.execution(t, 1, func(x *contracts.Execution) { x.NotBefore = time.Now().Add(500 * time.Millisecond) })
	testkit.Eventually(t, 10*time.Second, func() bool { return obs.skips(SkipStale) == 1 }, "the execution was not skipped as stale")
	if rec.count() != 0 {
		t.Errorf("performed %d times after its ack wait may have run out", rec.count())
	}
}

// A held execution keeps a small stack: it is decoded and opened on a
// performer, whose stack has grown already, not on the goroutine that
// holds it until its due time. Decoded there, each held goroutine's stack
// grew to 8 KiB; it is 4 KiB. Not parallel: it reads the process's stack
// memory, with enough held that other goroutines starting or ending
// meanwhile do not matter.
func TestAHeldExecutionKeepsASmallStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's stack frames are larger")
	}
	e := setup(t)
	e.ensureStreams(t)
	obs := newObserver()
	const n = 2000
	w, _ := e.worker(t, newRecorder(), func(c *Config) { c.Observer, c.Concurrency, c.Hold = obs, 8, n })
	due := time.Now().Add(5 * time.Minute)
	held := func(want int) func() bool {
		return func() bool {
			obs.mu.Lock()
			defer obs.mu.Unlock()
			return obs.held == want
		}
	}
	stacks := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.StackInuse)
	}
	// One held first, so that the performers and the pull loop have their
	// stacks before the measure starts.
	e.execution(t, 0, func(x *contracts.Execution) { x.NotBefore = due })
	testkit.Eventually(t, 10*time.Second, held(1), "the first execution was not held")
	before := stacks()
	for i := range n - 1 {
		e.execution(t, i+1, func(x *contracts.Execution) { x.NotBefore = due })
	}
	testkit.Eventually(t, time.Minute, held(n), "not every execution was held")
	per := (stacks() - before) / (n - 1)
	w.Stop(context.Background())
	if per > 6<<10 {
		t.Fatalf("each held execution took %d bytes of stack, want at most 6 KiB", per)
	}
	t.Logf("%d bytes of stack per held execution", per)
}

// The executions a worker held are performed without its slots, which
// stay free to fetch the rest of a burst behind them meanwhile; the
// calls made at once stay within Concurrency.
func TestAWorkerFetchesMoreWhileItPerformsWhatItHeld(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	_, sender := e.holdThreeDue(t)
	e.execution(t, 4, nil) // due already
	cons, err := e.js.Consumer(context.Background(), contracts.ExecStream, contracts.WorkersConsumer)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 4
	}, "the worker did not fetch the fourth execution while performing one it held")
	sender.mu.Lock()
	calls := len(sender.seen)
	sender.mu.Unlock()
	if calls != 1 {
		t.Errorf("%d calls made at once with a Concurrency of 1", calls)
	}
	close(sender.release)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 4 }, "not every result was stored")
}

// Executions delivered due already go first also between two of them:
// with a Concurrency of 1, the second is fetched only once the first was
// sent, and its result waits until the last of those that were behind
// it was sent, not only while one is in hand.
func TestResultsWaitForTheRestOfABacklogStillInTheStream(t *testing.T) {
	t.Parallel()
	// Results wait with report tokens, Concurrency + Hold of them.
	sender := performThreeDue(t, 1, 2, 1)
	sender.releaseAndCheck(3, "a result went before an execution that was behind it in the stream")
}

// The rest of a backlog counts among the executions due now until one
// comes with nothing behind it, or until backlogExpiry passed without
// another: another worker may have taken the rest.
func TestTheRestOfABacklogCountsUntilItCameOrExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gate
		b := backlog{g: &g}
		if b.saw(0) {
			t.Fatal("an execution with none behind it and no backlog counts among those due now")
		}
		if g.opened() != nil {
			t.Fatal("the gate is shut with nothing due")
		}
		// Two of a backlog come and are sent; the gate stays shut.
		for n := uint64(2); n > 0; n-- {
			if !b.saw(n) {
				t.Fatalf("an execution with %d behind it does not count", n)
			}
			g.leave()
			if g.opened() == nil {
				t.Fatalf("the gate opened after one with %d behind it was sent", n)
			}
			time.Sleep(backlogExpiry / 2)
		}
		// The last of it counts, and the gate opens once it was sent.
		if !b.saw(0) {
			t.Fatal("the last of a backlog does not count")
		}
		g.leave()
		if g.opened() != nil {
			t.Fatal("the gate is shut after the last of the backlog was sent")
		}
		// Another backlog whose rest another worker takes: the gate
		// opens after backlogExpiry.
		b.saw(7)
		g.leave()
		time.Sleep(backlogExpiry - time.Millisecond)
		synctest.Wait()
		if g.opened() == nil {
			t.Fatal("the backlog expired early")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if g.opened() != nil {
			t.Fatal("the backlog did not expire")
		}
	})
}

// A worker paused while an execution waited for a performer, past its ack
// wait, does not call it once a performer takes it: the freshness of a
// delivery is checked on the performer, just before the call.
func TestAnExecutionStaleByTheTimeAPerformerTakesItIsNotCalled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	rec.block = make(chan struct{})
	clock := &jumpingClock{}
	obs := newObserver()
	// One performer: the second execution due waits for the first's call.
	e.worker(t, rec, func(c *Config) { c.Observer, c.AckWait, c.Concurrency, c.clock = obs, 3*time.Second, 1, clock.now })
	due := time.Now().Add(300 * time.Millisecond) // held until due, neither in a slot
	for i := range 2 {
		e.execution(t, i, func(x *contracts.Execution) { x.NotBefore = due })
	}
	<-rec.started
	testkit.Eventually(t, 10*time.Second, func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return obs.started == 2
	}, "the second execution did not come due")
	clock.jump(10 * time.Second) // paused past the ack wait meanwhile
	close(rec.block)
	testkit.Eventually(t, 10*time.Second, func() bool { return obs.skips(SkipStale) == 1 }, "the second execution was not skipped as stale")
	if n := rec.count(); n != 1 {
		t.Errorf("%d calls, want 1: an execution was called after its ack wait may have run out", n)
	}
}
