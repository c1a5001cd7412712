package dispatch

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// outage fails every Redis command while down is set.
type outage struct{ down atomic.Bool }

var errOutage = errors.New("redis is down (test)")

func (o *outage) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (o *outage) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if o.down.Load() {
			cmd.SetErr(errOutage)
			return errOutage
		}
		return next(ctx, cmd)
	}
}

func (o *outage) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if o.down.Load() {
			for _, c := range cmds {
				c.SetErr(errOutage)
			}
			return errOutage
		}
		return next(ctx, cmds)
	}
}

// flakyRedis returns a client of the test's Redis whose commands fail
// while the returned outage is down.
func (e *env) flakyRedis(t *testing.T) (redis.UniversalClient, *outage) {
	t.Helper()
	c, ok := e.rdb.(*redis.Client)
	if !ok {
		t.Skip("the test's Redis is not a single-server client")
	}
	rdb := redis.NewClient(c.Options())
	t.Cleanup(func() { rdb.Close() })
	o := &outage{}
	rdb.AddHook(o)
	return rdb, o
}

// Regression: a job written while Redis did not answer never reached the
// timer (the failed change was only logged) until the planner restarted.
func TestAJobWrittenWhileRedisFailsIsScheduledWhenItAnswers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	rdb, o := e.flakyRedis(t)
	e.plannerRDB = rdb
	d := e.planner(t, func(c *Config) { c.Lease = time.Second })
	o.down.Store(true)
	e.addJob(t, "written-during-the-outage", minuteJob(t0.Add(time.Minute), 0))
	testkit.Eventually(t, 10*time.Second, d.follower.stale.Load, "the failed change was not noted")
	o.down.Store(false)

	ix := e.index(t)
	testkit.Eventually(t, 10*time.Second, func() bool {
		n, _ := ix.Len(context.Background())
		return n == 1
	}, "the job did not reach the timer once Redis answered")
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	e.waitCount(t, 1)
}

// failingHistory fails to give the tallies while failing is set.
type failingHistory struct{ failing atomic.Bool }

func (h *failingHistory) Tallies(context.Context) (map[string]contracts.Tally, error) {
	if h.failing.Load() {
		return nil, errors.New("history is down (test)")
	}
	return nil, nil
}

func (h *failingHistory) Purge(context.Context, string) error { return nil }

// A planner rebuilding the timer after Redis lost it is not ready until
// the rebuild is done, and retries one that failed.
func TestAPlannerIsNotReadyWhileItRebuildsTheTimer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	hist := &failingHistory{}
	e.addJob(t, "j", minuteJob(t0.Add(time.Minute), 0))
	d := e.planner(t, func(c *Config) { c.Lease = time.Second; c.History = hist })
	hist.failing.Store(true)
	testkit.FlushPrefix(e.rdb, e.prefix) // Redis loses everything
	testkit.Eventually(t, 10*time.Second, func() bool { return !d.Ready() }, "the planner stayed ready while it could not rebuild the timer")
	hist.failing.Store(false)
	testkit.Eventually(t, 10*time.Second, d.Ready, "the planner did not become ready after rebuilding")
	ix := e.index(t)
	if n, err := ix.Len(context.Background()); err != nil || n != 1 {
		t.Errorf("after the rebuild the timer holds %d entries (%v), want 1", n, err)
	}
}
