package worker

import "sync"

// performers run the worker's actions on goroutines that outlive them.
// An action's call grows the stack of the goroutine that makes it (an
// HTTP request through net/http to 16 KiB and more), and a goroutine's
// stack grows by copying: made on the goroutine of its delivery, which is
// new for each execution, every action would pay for that copy again. A
// performer pays once, and takes the next action with its stack grown.
//
// A performer is started when an action finds none idle, and stays until
// the worker stops: as actions run only in a slot, there are at most
// Concurrency of them.
type performers struct {
	calls    chan func()
	stopOnce sync.Once
}

func newPerformers() *performers {
	return &performers{calls: make(chan func())}
}

// run calls f on a performer and returns once it returned. It must not be
// called after stop.
func (p *performers) run(f func()) {
	done := make(chan struct{})
	call := func() {
		defer close(done)
		f()
	}
	select {
	case p.calls <- call:
	default:
		go p.serve(call)
	}
	<-done
}

// serve calls first, then each call handed to it until stop.
func (p *performers) serve(first func()) {
	first()
	for call := range p.calls {
		call()
	}
}

// stop ends the idle performers, and each busy one once its call returns.
// It is idempotent.
func (p *performers) stop() {
	p.stopOnce.Do(func() { close(p.calls) })
}
