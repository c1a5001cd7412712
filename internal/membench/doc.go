// Package membench measures the resident memory of the scheduler's roles,
// each a process of the real binary against a nats-server and a
// redis-server of its own, with no job and with a million scheduled jobs.
// It holds benchmarks only; see BenchmarkRoleMemory.
package membench
