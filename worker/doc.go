// Package worker consumes execution messages from JetStream, performs each
// action with a deadline, publishes one result event per attempt, and acks
// the execution once its result is stored.
package worker
