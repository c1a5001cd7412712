package worker

import (
	"sync"
	"sync/atomic"
)

// performers run the worker's deep calls (decoding and opening an
// execution, performing its action) on goroutines that outlive them. An
// action's call grows the stack of the goroutine that makes it (an HTTP
// request through net/http to 16 KiB and more), and a goroutine's stack
// grows by copying: made on the goroutine of its delivery, which is new
// for each execution, every action would pay for that copy again, and a
// held execution would keep the grown stack until its due time. A
// performer pays once, and takes the next call with its stack grown.
//
// A performer is started when a call finds none idle, up to limit (the
// worker's Concurrency: the calls made at once), and stays until the
// worker stops; past the limit a call waits for one to be idle, as one
// that just finished a call is for a moment. Decoding goes before the
// actions waiting (see decode).
type performers struct {
	actions  chan func()
	decoding chan func()
	limit    int64
	started  atomic.Int64
	stopOnce sync.Once
}

func newPerformers(limit int) *performers {
	return &performers{actions: make(chan func()), decoding: make(chan func()), limit: int64(limit)}
}

// run performs an action with f on a performer and returns once f
// returned. It must not be called after stop.
func (p *performers) run(f func()) { p.on(p.actions, f) }

// decode decodes and opens an execution with f on a performer, before
// the actions waiting for one, and returns once f returned: it is short,
// and an execution delivered due counts among those due now (and keeps
// the results back) only once decoded, which must not wait behind the
// calls of a burst held until due. It must not be called after stop.
func (p *performers) decode(f func()) { p.on(p.decoding, f) }

func (p *performers) on(queue chan func(), f func()) {
	done := make(chan struct{})
	call := func() {
		defer close(done)
		f()
	}
	select {
	case queue <- call:
	default:
		if p.started.Add(1) <= p.limit {
			go p.serve(call)
		} else {
			p.started.Add(-1)
			queue <- call
		}
	}
	<-done
}

// serve calls first, then each call handed to it, decoding first, until
// stop.
func (p *performers) serve(first func()) {
	first()
	for {
		var (
			call func()
			ok   bool
		)
		select {
		case call, ok = <-p.decoding:
		default:
			select {
			case call, ok = <-p.decoding:
			case call, ok = <-p.actions:
			}
		}
		if !ok {
			return
		}
		call()
	}
}

// stop ends the idle performers, and each busy one once its call returns.
// It is idempotent.
func (p *performers) stop() {
	p.stopOnce.Do(func() {
		close(p.decoding)
		close(p.actions)
	})
}
