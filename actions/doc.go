// Package actions defines the one interface every action sender implements
// (HTTP and HTTPS, Azure Storage queue, Service Bus queue and topic), what
// an attempt carries to it and what it reports back. The senders live in
// the sub-packages httpaction, storagequeue and servicebus; Mux routes an
// action to the sender of its type. Nothing here knows NATS or Redis.
package actions
