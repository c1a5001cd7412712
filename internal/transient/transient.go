package transient

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsErrors are the NATS and JetStream client errors of a condition that
// passes: the connection is down, reconnecting or draining, the server did
// not answer in time, or nothing answered the request (the stream's leader
// is being elected, JetStream is starting, or the subscription of a
// consumer just created has not reached this server yet).
var natsErrors = []error{
	nats.ErrTimeout,
	nats.ErrNoResponders,
	nats.ErrConnectionClosed,
	nats.ErrConnectionReconnecting,
	nats.ErrConnectionDraining,
	nats.ErrDisconnected,
	nats.ErrStaleConnection,
	nats.ErrNoServers,
	nats.ErrMaxConnectionsExceeded,
	nats.ErrReconnectBufExceeded,
	nats.ErrSlowConsumer,
	jetstream.ErrNoStreamResponse,
	jetstream.ErrNoHeartbeat,
	jetstream.ErrConnectionClosed,
	jetstream.ErrServerShutdown,
	jetstream.ErrAsyncPublishTimeout,
	jetstream.ErrConsumerLeadershipChanged,
	jetstream.ErrOrderedConsumerReset,
	jetstream.ErrJetStreamNotEnabled,
}

// apiCodes are the JetStream API errors of a condition that passes,
// besides those answered with status 503: a cluster that is not (yet) able
// to answer — JetStream starting, no meta leader, a stream or consumer
// without a leader or offline, too few nodes up for the replicas asked.
var apiCodes = map[jetstream.ErrorCode]bool{
	10005: true, // no suitable peers for placement (a node is down)
	10007: true, // JetStream cluster not assigned to this server
	10008: true, // JetStream system temporarily unavailable
	10009: true, // JetStream cluster can not handle request
	10023: true, // insufficient resources (a node is down)
	10039: true, // JetStream not enabled for account (yet)
	10041: true, // a Raft group failed to apply, such as during an election
	10076: true, // JetStream not enabled (yet)
	10118: true, // stream is offline
	10119: true, // consumer is offline
	10194: true, // stream is offline: reason
	10195: true, // consumer is offline: reason
}

// redisPrefixes start the Redis error replies of a condition that passes:
// the server is loading its data set, the cluster is down or resharding, a
// replica has not been promoted yet, or a write went to a replica during a
// failover.
var redisPrefixes = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "NOREPLICAS", "BUSY"}

// Is reports whether err is a condition that may pass: a retry a moment
// later may succeed. Errors of the caller's own making (a missing key, a
// revision conflict, an invalid request) are not, nor is nil.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, e := range natsErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiCodes[apiErr.ErrorCode] || apiErr.Code == 503
	}
	return isRedis(err) || isNetwork(err)
}

// isRedis reports a Redis error reply that passes, or a go-redis client
// pool that had no connection to give. Redis replies are recognized by
// the RedisError method go-redis gives them, so that this package does
// not link the Redis client into binaries that have no use for it.
func isRedis(err error) bool {
	var reply interface {
		error
		RedisError()
	}
	if errors.As(err, &reply) {
		msg := strings.TrimPrefix(reply.Error(), "ERR ")
		for _, p := range redisPrefixes {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return strings.HasPrefix(msg, "max number of clients reached")
	}
	msg := err.Error()
	return strings.Contains(msg, "redis: connection pool timeout") || strings.Contains(msg, "redis: connection pool exhausted") ||
		strings.Contains(msg, "redis: client is closed")
}

// isNetwork reports a connection that failed, was refused, reset or timed
// out, or closed half way through an answer.
func isNetwork(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}

// Refused reports a transient fault that came before the operation could
// take effect: nothing answered, the server refused it with an error (a
// JetStream API error, a Redis error reply), or no connection could be
// made. Unlike a timeout or a connection lost half way, such a fault
// leaves nothing done, so an operation that is not idempotent may be
// tried again.
func Refused(err error) bool {
	if !Is(err) {
		return false
	}
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return true
	}
	var reply interface {
		error
		RedisError()
	}
	if errors.As(err, &reply) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "redis: connection pool timeout") || strings.Contains(msg, "redis: connection pool exhausted")
}
