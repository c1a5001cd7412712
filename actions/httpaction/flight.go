package httpaction

import (
	"context"
	"sync"
)

// flight runs one call per key at a time: callers that ask for a key while
// its call runs wait for that call's result instead of starting their own.
type flight[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{}
	// joined counts the callers that waited for this call besides the one
	// that started it.
	joined int
	val    V
	err    error
}

// do returns the result of fn for key, running fn once for all the callers
// that ask for key while it runs. fn runs on its own goroutine with ctx's
// values but not its cancellation, so a caller that gives up does not fail
// the others; each caller waits only as long as its own ctx allows.
//
// A caller that found nothing in a cache before calling do may arrive just
// after the call that filled the cache ended, so fn should look in the
// cache again before doing the work.
func (f *flight[K, V]) do(ctx context.Context, key K, fn func(context.Context) (V, error)) (V, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[K]*flightCall[V])
	}
	c, ok := f.calls[key]
	if ok {
		c.joined++
	} else {
		c = &flightCall[V]{done: make(chan struct{})}
		f.calls[key] = c
		go f.run(context.WithoutCancel(ctx), key, c, fn)
	}
	f.mu.Unlock()

	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

func (f *flight[K, V]) run(ctx context.Context, key K, c *flightCall[V], fn func(context.Context) (V, error)) {
	defer func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		close(c.done)
	}()
	c.val, c.err = fn(ctx)
}
