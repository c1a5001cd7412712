// Package actions holds one sender per action type (HTTP and HTTPS, Azure
// Storage queue, Service Bus queue and topic) behind one interface. It knows
// nothing of NATS or Redis.
package actions
