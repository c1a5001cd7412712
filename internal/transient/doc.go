// Package transient tells a fault that can pass from one that will not: a
// NATS, JetStream or Redis condition (a timeout, no responders, a
// connection down or reconnecting, a cluster electing a leader, a Redis
// server loading its data) that a retry a moment later may not meet.
package transient
