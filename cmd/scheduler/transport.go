package main

import (
	"github.com/spf13/pflag"

	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/planner/service"
)

// Environment variables of the encrypted transport's flags.
const (
	envTLSCertFile   = "SCHEDULER_TLS_CERT_FILE"
	envTLSKeyFile    = "SCHEDULER_TLS_KEY_FILE"
	envNATSCreds     = "SCHEDULER_NATS_CREDS"
	envNATSNkey      = "SCHEDULER_NATS_NKEY"
	envNATSCAFile    = "SCHEDULER_NATS_CA_FILE"
	envNATSCertFile  = "SCHEDULER_NATS_CERT_FILE"
	envNATSKeyFile   = "SCHEDULER_NATS_KEY_FILE"
	envRedisCAFile   = "SCHEDULER_REDIS_CA_FILE"
	envRedisCertFile = "SCHEDULER_REDIS_CERT_FILE"
	envRedisKeyFile  = "SCHEDULER_REDIS_KEY_FILE"
)

// natsFlags adds the flags of how a role proves itself to NATS and checks
// the server.
func natsFlags(flags *pflag.FlagSet, vars map[string]string, o *streams.ConnectOptions) {
	flags.StringVar(&o.CredsFile, "nats-creds", "", "NATS credentials file (user JWT and nkey seed) for a server in operator mode")
	flags.StringVar(&o.NkeyFile, "nats-nkey", "", "file holding the seed of a NATS user nkey")
	flags.StringVar(&o.CAFile, "nats-ca-file", "", "PEM certificate authorities that verify the NATS server (turns TLS on)")
	flags.StringVar(&o.CertFile, "nats-cert-file", "", "PEM client certificate for a NATS server that verifies clients (with --nats-key-file; turns TLS on)")
	flags.StringVar(&o.KeyFile, "nats-key-file", "", "PEM private key of --nats-cert-file")
	vars["nats-creds"], vars["nats-nkey"], vars["nats-ca-file"] = envNATSCreds, envNATSNkey, envNATSCAFile
	vars["nats-cert-file"], vars["nats-key-file"] = envNATSCertFile, envNATSKeyFile
}

// tlsFlags adds --tls-cert-file and --tls-key-file, the certificate a
// role serves what, its endpoints, over HTTPS with.
func tlsFlags(flags *pflag.FlagSet, vars map[string]string, certFile, keyFile *string, what string) {
	flags.StringVar(certFile, "tls-cert-file", "", "PEM certificate (and intermediates) to serve "+what+" over HTTPS with, reloaded when it changes (with --tls-key-file)")
	flags.StringVar(keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	vars["tls-cert-file"], vars["tls-key-file"] = envTLSCertFile, envTLSKeyFile
}

// redisTLSFlags adds the planner's flags of TLS to Redis.
func redisTLSFlags(flags *pflag.FlagSet, vars map[string]string, r *service.RedisTLS) {
	flags.StringVar(&r.CAFile, "redis-ca-file", "", "PEM certificate authorities that verify the Redis server of a rediss:// URL (default: the system's)")
	flags.StringVar(&r.CertFile, "redis-cert-file", "", "PEM client certificate for a Redis server that verifies clients (with --redis-key-file; rediss:// only)")
	flags.StringVar(&r.KeyFile, "redis-key-file", "", "PEM private key of --redis-cert-file")
	vars["redis-ca-file"], vars["redis-cert-file"], vars["redis-key-file"] = envRedisCAFile, envRedisCertFile, envRedisKeyFile
}
