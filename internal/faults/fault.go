package faults

import "time"

// Kind is a kind of fault.
type Kind string

// The faults the suite injects.
const (
	KillPlanner    Kind = "kill -9 a planner"
	PausePlanner   Kind = "SIGSTOP a planner"
	KillWorker     Kind = "kill -9 a worker mid-action"
	PauseWorker    Kind = "SIGSTOP a worker mid-action"
	KillExecLeader Kind = "kill -9 the EXEC leader"
	KillKVLeader   Kind = "kill -9 the KV leader"
	FlushRedis     Kind = "FLUSHALL Redis"
	KillRedis      Kind = "kill -9 Redis"
)

// EveryKind lists each kind of fault once, in the order a round injects
// them.
var EveryKind = []Kind{KillPlanner, PausePlanner, KillWorker, PauseWorker, KillExecLeader, KillKVLeader, FlushRedis, KillRedis}

// Fault is one fault injected.
type Fault struct {
	Kind Kind
	// Target names what was hit (a role, a NATS node, Redis).
	Target string
	// Start is when it was injected; End when it was lifted (the process
	// started again or resumed; Start for a flush).
	Start, End time.Time
	// Key is, for a worker fault, the attempt the worker had in flight.
	Key string
	// Healthy is when every role was ready and every NATS node healthy
	// again after End; zero when that did not happen within the deadline.
	Healthy time.Time
	// Problem says what went wrong injecting it, or what was still not
	// healthy at the deadline.
	Problem string
}
