package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// Regression: a listing whose store call hung (a stream without a leader
// while a NATS node was replaced) took its whole 5 s attempt after the
// retry window, so clients gave up before the 503 came. No attempt now
// runs past the window by more than a point read's time.
func TestAHungAttemptEndsSoonAfterTheRetryWindow(t *testing.T) {
	t.Parallel()
	window := 200 * time.Millisecond
	ctx := withRetryWindow(context.Background(), &retryWindow{
		end: time.Now().Add(window), logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	start := time.Now()
	_, faulted, err := retry(ctx, bulkAttempt, func(error) bool { return true }, func(ctx context.Context) (int, error) {
		<-ctx.Done() // the store never answers
		return 0, ctx.Err()
	})
	took := time.Since(start)
	if !faulted || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("faulted %v, error %v: want the attempt's deadline", faulted, err)
	}
	if limit := window + pointAttempt + 500*time.Millisecond; took > limit {
		t.Fatalf("the request took %s, more than its window and a point read's time (%s)", took, limit)
	}
}
