// Package timer is the Redis index of due occurrences: it holds the next
// dispatch of every job, hands each one out exactly once to whichever of any
// number of planners claims it when it comes due, and takes it back when the
// planner commits, releases or loses its lease.
//
// # Layout
//
// Entries are spread over Config.Partitions partitions by the FNV-1a hash of
// the job key, so every entry of one job lives in one partition. A partition
// is four keys sharing one Redis Cluster hash tag, so every script touches a
// single hash slot:
//
//	<prefix>:{pNN}:due       ZSET  entry id -> due time (unix ms)
//	<prefix>:{pNN}:inflight  ZSET  entry id -> lease expiry (unix ms)
//	<prefix>:{pNN}:state     HASH  entry id -> packed entry
//	<prefix>:{pNN}:slots     HASH  job id -> "slot|slot|" (only jobs with a non-empty slot)
//
// An entry id is the job id, 14 base64url characters of the SHA-256 of the
// job key, followed by the slot ("" for the job's schedule). The packed entry
// (see packed.go) is
//
//	token|due|expected-due|occurrence|attempt|action|remaining|revision|slot|jobKey
//
// with integers in decimal and 0 written as nothing, times in unix
// milliseconds, the action as M or E, and the subscription GUID in the job
// key as its 16 bytes. Token and due are empty while the entry is
// pending (the due set's score holds the due time); Claim writes both. One
// scheduled job of the usual shape costs about 265 bytes of Redis memory
// (TestMemoryPerJob).
// More keys sit outside the partitions: <prefix>:built,
// <prefix>:lock:<name>, and <prefix>:executions:<minute>, the attempts that
// ended in each of the last 25 hours' minutes by collection and outcome
// (see executions.go).
//
// # Claims
//
// Claim moves due entries to the in-flight set with a lease and stamps them
// with a fresh random token. Commit and Release act on the entry only while
// it carries that token, so a planner that lost its lease (Reclaim gave the
// entry back and someone else claimed it) cannot overwrite the newer state,
// and committing twice does nothing the second time. Schedule and Remove act
// regardless and clear the token: the newest definition always wins over a
// claim in progress.
//
// Redis is derived state. Built reports false after the database was emptied,
// and the planner then rebuilds the index from NATS and calls MarkBuilt. The
// server must not evict keys (maxmemory-policy noeviction): an evicted
// partition key would lose entries without Built noticing.
package timer
