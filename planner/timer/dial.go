package timer

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Conn is a Redis client from Dial: the commands of the Index, a ping and
// Close.
type Conn interface {
	Client
	Ping(ctx context.Context) *redis.StatusCmd
	Close() error
}

// Dial returns a client of the Redis server url names (redis:// or
// rediss://), or, with cluster, of the Redis Cluster one of whose nodes it
// names (more seed nodes as ?addr=host:port). It connects when first used.
// configureTLS, when not nil, adjusts the TLS configuration a rediss:// URL
// asks for (it receives nil for redis://).
//
// It is here, not in the packages that use the Index, because naming the
// client's options or types has the compiler generate go-redis's client
// method set in that package too (see Client).
func Dial(url string, cluster bool, configureTLS func(*tls.Config)) (Conn, error) {
	if cluster {
		opts, err := redis.ParseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("the Redis Cluster URL: %w", err)
		}
		if configureTLS != nil {
			configureTLS(opts.TLSConfig)
		}
		return redis.NewClusterClient(opts), nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("the Redis URL: %w", err)
	}
	if configureTLS != nil {
		configureTLS(opts.TLSConfig)
	}
	return redis.NewClient(opts), nil
}
