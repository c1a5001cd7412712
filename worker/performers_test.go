package worker

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// goroutineID returns the id of the calling goroutine, from the first line
// of its stack ("goroutine 42 [running]:").
func goroutineID() int {
	var buf [64]byte
	line := buf[:runtime.Stack(buf[:], false)]
	line = bytes.TrimPrefix(line, []byte("goroutine "))
	id, _ := strconv.Atoi(string(line[:bytes.IndexByte(line, ' ')]))
	return id
}

// goroutines is a Sender that notes on which goroutine each action ran.
type goroutines struct {
	mu  sync.Mutex
	ids map[int]int
	n   int
}

func (g *goroutines) Send(context.Context, *contracts.JobAction, actions.Attempt) actions.Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ids[goroutineID()]++
	g.n++
	return actions.Outcome{Succeeded: true, StatusCode: 200}
}

func (g *goroutines) Close() error { return nil }

func (g *goroutines) seen() (actions, goroutines int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, len(g.ids)
}

// Actions run on goroutines that outlive them, at most one per slot, so
// that the stack an action's call grows is grown once per goroutine, not
// once per execution.
func TestActionsRunOnGoroutinesThatOutliveThem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	sender := &goroutines{ids: map[int]int{}}
	e.worker(t, sender, func(c *Config) { c.Concurrency = 2 })
	const n = 40
	for i := range n {
		e.execution(t, i+1, nil)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(e.results(t)) == n }, "%d results of %d", len(e.results(t)), n)
	performed, on := sender.seen()
	if performed != n || on > 2 {
		t.Fatalf("%d actions ran on %d goroutines, want %d on at most 2 (the worker's Concurrency)", performed, on, n)
	}
}

func TestPerformersAreReusedAndEndWhenStopped(t *testing.T) {
	t.Parallel()
	p := newPerformers(3)
	ids := map[int]bool{}
	for range 10 {
		p.run(func() { ids[goroutineID()] = true })
	}
	if len(ids) != 1 {
		t.Fatalf("10 calls one after another ran on %d goroutines, want 1", len(ids))
	}
	// Three at once need three performers; four, with a limit of three,
	// wait for one of them.
	for _, n := range []int{3, 4} {
		atOnce(p, n, min(n, 3), ids)
		if len(ids) != 3 {
			t.Fatalf("%d calls at once with a limit of three ran on %d goroutines, want 3", n, len(ids))
		}
	}
	p.stop()
	p.stop() // idempotent
	if _, open := <-p.actions; open {
		t.Fatal("the pool still takes actions after stop")
	}
	if _, open := <-p.decoding; open {
		t.Fatal("the pool still takes decoding after stop")
	}
}

// atOnce makes n calls on p at once, each noting its goroutine in ids,
// and returns when all returned; running of them run together before any
// returns.
func atOnce(p *performers, n, running int, ids map[int]bool) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		release = make(chan struct{})
		started = make(chan struct{}, n)
	)
	for range n {
		wg.Go(func() {
			p.run(func() {
				mu.Lock()
				ids[goroutineID()] = true
				mu.Unlock()
				started <- struct{}{}
				<-release
			})
		})
	}
	for range running {
		<-started
	}
	close(release)
	wg.Wait()
}

// An execution waiting to be decoded goes before the actions waiting for
// a performer: decoded, one due counts among those due now.
func TestDecodingGoesBeforeTheActionsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPerformers(1)
		defer p.stop()
		release := make(chan struct{})
		var order []string
		go p.run(func() { <-release })
		synctest.Wait()
		go p.run(func() { order = append(order, "action") })
		synctest.Wait()
		go p.decode(func() { order = append(order, "decoding") })
		synctest.Wait()
		close(release)
		synctest.Wait()
		if want := []string{"decoding", "action"}; !slices.Equal(order, want) {
			t.Errorf("ran %v, want %v", order, want)
		}
	})
}
