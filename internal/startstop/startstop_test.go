package startstop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestStopEndsTheLoopAndWaitsForIt(t *testing.T) {
	t.Parallel()
	var l Loop
	var returned atomic.Bool
	if err := l.Start(context.Background(), func(ctx context.Context) {
		<-ctx.Done()
		returned.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	l.Stop()
	if !returned.Load() {
		t.Fatal("Stop returned before the loop did")
	}
	l.Stop() // idempotent
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is not closed after Stop")
	}
}

func TestALoopStartsOnce(t *testing.T) {
	t.Parallel()
	var l Loop
	defer l.Stop()
	run := func(ctx context.Context) { <-ctx.Done() }
	if err := l.Start(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(context.Background(), run); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
}

func TestStopBeforeStartDoesNothing(t *testing.T) {
	t.Parallel()
	var l Loop
	l.Stop()
	if l.Done() != nil {
		t.Fatal("a loop never started has a Done channel")
	}
}

func TestTheStartContextEndsTheLoop(t *testing.T) {
	t.Parallel()
	var l Loop
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Start(ctx, func(ctx context.Context) { <-ctx.Done() }); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
}

func TestEveryCallsUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func(context.Context) { calls <- struct{}{} })
	}()
	for range 3 {
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatal("each was not called")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return when its context ended")
	}
}
