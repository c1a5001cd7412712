// Package startstop gives the long-running loops of every role one
// lifecycle: Start runs the loop in a goroutine, Stop cancels it and waits
// for it to return. Stop is idempotent and safe before Start.
package startstop

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrStarted is returned by Start on a loop that was started before.
var ErrStarted = errors.New("already started")

// Loop runs one function until it is stopped. The zero Loop is ready to
// use; a Loop runs once: it cannot be started again after Stop.
type Loop struct {
	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start runs run in a goroutine with a context that ends when Stop is
// called or ctx ends. It returns ErrStarted when the loop was started
// before.
func (l *Loop) Start(ctx context.Context, run func(ctx context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return ErrStarted
	}
	l.started = true
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() {
		defer close(l.done)
		run(ctx)
	}()
	return nil
}

// Stop cancels the loop's context and waits until run has returned. It is
// idempotent, and does nothing on a loop never started.
func (l *Loop) Stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Done is closed once run has returned; nil before Start.
func (l *Loop) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// Every calls each every interval until ctx ends: the shape of the
// maintenance loops.
func Every(ctx context.Context, interval time.Duration, each func(ctx context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		each(ctx)
	}
}
