// Package builtin assembles the senders of every action type the scheduler
// supports into one actions.Mux, from one configuration.
package builtin

import (
	"errors"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/actions/servicebus"
	"github.com/jobscheduler/scheduler/actions/storagequeue"
	"github.com/jobscheduler/scheduler/contracts"
)

// Config configures the senders.
type Config struct {
	// HTTP configures Http and Https actions.
	HTTP httpaction.Config
	// StorageQueue configures StorageQueue actions.
	StorageQueue storagequeue.Config
	// ServiceBus configures ServiceBusQueue and ServiceBusTopic actions.
	ServiceBus servicebus.Config
}

// New returns a Mux that sends every action type, each sender keeping its
// clients for reuse across executions.
func New(cfg Config) (*actions.Mux, error) {
	h, err := httpaction.New(cfg.HTTP)
	if err != nil {
		return nil, err
	}
	q, err := storagequeue.New(cfg.StorageQueue)
	if err != nil {
		return nil, errors.Join(err, h.Close())
	}
	b, err := servicebus.New(cfg.ServiceBus)
	if err != nil {
		return nil, errors.Join(err, h.Close(), q.Close())
	}
	return actions.NewMux(map[contracts.ActionType]actions.Sender{
		contracts.ActionHTTP:            h,
		contracts.ActionHTTPS:           h,
		contracts.ActionStorageQueue:    q,
		contracts.ActionServiceBusQueue: b,
		contracts.ActionServiceBusTopic: b,
	}), nil
}
