// Package servicebus performs ServiceBusQueue and ServiceBusTopic actions:
// it sends a job's message, with its brokered and custom properties, to a
// queue or topic of an Azure Service Bus namespace over AMQP, authenticated
// with the action's shared access key.
//
// A Sender is built once per worker and shared by every execution. It keeps
// one client (one AMQP connection) per namespace endpoint and key, and one
// entity sender per queue or topic of that client, so that an entity that
// receives a message every minute is not reconnected every minute. The
// number of entity senders is bounded: the least recently used is closed
// first, and a client is closed with its last sender. A sender or client is
// also closed after a failure it will not recover from on its own (a
// refused key, a missing entity, a lost connection, a timeout), so that the
// next attempt starts afresh.
//
// One attempt is one send: the Service Bus SDK's own retries are turned
// off, so that the job's retry policy alone decides whether to try again
// and job history shows every try. Each message carries the attempt's id as
// its message id unless the job sets one, so that a namespace with
// duplicate detection drops a message that a redelivered attempt sends
// twice, and the attempt's trace context as its Diagnostic-Id application
// property, as Azure's own Service Bus clients do.
//
// The shared access key never appears in an Outcome or a log: outcomes are
// built from the namespace, entity and error code, and the library's error
// text is scrubbed of the key and the connection string.
package servicebus
