package httpaction

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// joined returns how many callers wait for key's call besides the one that
// started it, and whether a call for key runs.
func (f *flight[K, V]) joined(key K) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.calls[key]
	if !ok {
		return 0, false
	}
	return c.joined, true
}

func TestFlight(t *testing.T) {
	t.Parallel()

	t.Run("runs one call for callers that ask at once", func(t *testing.T) {
		t.Parallel()
		var f flight[string, int]
		var runs atomic.Int32
		release := make(chan struct{})
		const callers = 10
		results := make(chan int, callers)
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				v, err := f.do(context.Background(), "k", func(context.Context) (int, error) {
					runs.Add(1)
					<-release
					return 42, nil
				})
				if err != nil {
					t.Errorf("do: %v", err)
				}
				results <- v
			})
		}
		pollUntil(t, func() bool { n, _ := f.joined("k"); return n == callers-1 })
		close(release)
		wg.Wait()
		close(results)
		for v := range results {
			if v != 42 {
				t.Errorf("a caller got %d, want 42", v)
			}
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("fn ran %d times, want 1", n)
		}
		if _, running := f.joined("k"); running {
			t.Error("the call is still registered after it ended")
		}
	})

	t.Run("lets a caller give up without failing the others", func(t *testing.T) {
		t.Parallel()
		var f flight[string, int]
		release := make(chan struct{})
		fn := func(ctx context.Context) (int, error) {
			<-release
			return 7, ctx.Err()
		}
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() {
			_, err := f.do(ctx, "k", fn)
			gaveUp <- err
		}()
		pollUntil(t, func() bool { _, running := f.joined("k"); return running })
		other := make(chan int, 1)
		go func() {
			v, _ := f.do(context.Background(), "k", fn)
			other <- v
		}()
		pollUntil(t, func() bool { n, _ := f.joined("k"); return n == 1 })
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that gave up got %v, want context.Canceled", err)
		}
		close(release)
		if v := <-other; v != 7 {
			t.Errorf("the other caller got %d, want 7 (the call must not see the first caller's cancellation)", v)
		}
	})

	t.Run("runs a new call once the previous one ended", func(t *testing.T) {
		t.Parallel()
		var f flight[string, int]
		var runs atomic.Int32
		fn := func(context.Context) (int, error) { return int(runs.Add(1)), nil }
		a, _ := f.do(context.Background(), "k", fn)
		b, _ := f.do(context.Background(), "k", fn)
		if a != 1 || b != 2 {
			t.Errorf("got %d then %d, want 1 then 2", a, b)
		}
	})
}

// pollUntil polls cond until it holds, failing the test after a deadline.
func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met before the deadline")
		}
		time.Sleep(time.Millisecond) // polling interval, not a wait for time to pass
	}
}
