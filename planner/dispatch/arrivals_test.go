package dispatch

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
)

// arrival is an execution as it arrived on NATS, and when.
type arrival struct {
	at   time.Time
	exec contracts.Execution
}

// execArrivals records each execution published on EXEC's subjects when
// it arrives. Its handler only notes the time and the data; decoding them
// afterwards keeps the subscriber's own work out of the times noted.
type execArrivals struct {
	mu   sync.Mutex
	at   []time.Time
	data [][]byte
}

// watchExecutions subscribes to EXEC's subjects on e's server, room made
// for expected arrivals, until the test ends.
func watchExecutions(tb testing.TB, e *env, expected int) *execArrivals {
	tb.Helper()
	nc, err := nats.Connect(e.ns.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	a := &execArrivals{at: make([]time.Time, 0, expected), data: make([][]byte, 0, expected)}
	sub, err := nc.Subscribe(contracts.ExecSubjectPrefix+">", func(m *nats.Msg) {
		at := time.Now()
		a.mu.Lock()
		a.at, a.data = append(a.at, at), append(a.data, m.Data)
		a.mu.Unlock()
	})
	if err != nil {
		tb.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return a
}

// count returns how many executions arrived so far.
func (a *execArrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.at)
}

// decoded returns the executions that arrived so far, decoded, in the
// order they arrived.
func (a *execArrivals) decoded(tb testing.TB) []arrival {
	tb.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]arrival, len(a.at))
	for i := range a.at {
		out[i].at = a.at[i]
		if err := json.Unmarshal(a.data[i], &out[i].exec); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}
