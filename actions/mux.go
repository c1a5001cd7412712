package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobscheduler/scheduler/contracts"
)

// Mux routes each action to the sender registered for its type.
type Mux struct {
	senders map[contracts.ActionType]Sender
}

// NewMux returns a Mux over the senders by action type. A sender may serve
// several types (Http and Https, the Service Bus queue and topic).
func NewMux(senders map[contracts.ActionType]Sender) *Mux {
	m := &Mux{senders: make(map[contracts.ActionType]Sender, len(senders))}
	for t, s := range senders {
		m.senders[t] = s
	}
	return m
}

// Send performs a with the sender of its type; an action of a type without
// a sender fails.
func (m *Mux) Send(ctx context.Context, a *contracts.JobAction, at Attempt) Outcome {
	if a == nil {
		return Failure("The execution carries no action.", nil)
	}
	s, ok := m.senders[a.Type]
	if !ok {
		return Failure(fmt.Sprintf("Action type %q is not supported by this worker.", a.Type), nil)
	}
	return s.Send(ctx, a, at)
}

// Close closes every sender once.
func (m *Mux) Close() error {
	seen := map[Sender]bool{}
	var errs []error
	for _, s := range m.senders {
		if !seen[s] {
			seen[s] = true
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
