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
	// AllowLoopback lets every action type reach loopback addresses:
	// targets, the OAuth authority, Azurite or a Service Bus emulator on
	// the worker's host. A sender's own AllowLoopback allows it for that
	// sender alone. Defaults to false.
	AllowLoopback bool
	// AllowPrivate lets every action type reach private addresses. A
	// sender's own AllowPrivate allows them for that sender alone.
	// Defaults to false.
	AllowPrivate bool
	// HTTP configures Http and Https actions.
	HTTP httpaction.Config
	// StorageQueue configures StorageQueue actions.
	StorageQueue storagequeue.Config
	// ServiceBus configures ServiceBusQueue and ServiceBusTopic actions.
	ServiceBus servicebus.Config
}

// New returns a Mux that sends every action type, each sender keeping its
// clients for reuse across executions. Every sender connects through the
// address policy of package netpolicy.
func New(cfg Config) (*actions.Mux, error) {
	cfg.HTTP.AllowLoopback = cfg.HTTP.AllowLoopback || cfg.AllowLoopback
	cfg.HTTP.AllowPrivate = cfg.HTTP.AllowPrivate || cfg.AllowPrivate
	cfg.StorageQueue.AllowLoopback = cfg.StorageQueue.AllowLoopback || cfg.AllowLoopback
	cfg.StorageQueue.AllowPrivate = cfg.StorageQueue.AllowPrivate || cfg.AllowPrivate
	cfg.ServiceBus.AllowLoopback = cfg.ServiceBus.AllowLoopback || cfg.AllowLoopback
	cfg.ServiceBus.AllowPrivate = cfg.ServiceBus.AllowPrivate || cfg.AllowPrivate
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
