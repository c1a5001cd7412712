// Package events holds what the roles report to their observers (metrics,
// traces): plain values of the standard library and contracts only, so that
// an observer links none of the roles' code (the worker's binary needs no
// Redis client to count what it does).
package events

import (
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Dispatched is one execution a planner published and JetStream stored.
type Dispatched struct {
	// JobKey is the job's KV key.
	JobKey string
	// Action, Occurrence and Attempt name the attempt: Occurrence is 0 for a
	// run outside the schedule, Attempt 0-based.
	Action     contracts.ActionName
	Occurrence int64
	Attempt    int
	// Due is when the attempt was due.
	Due time.Time
	// TraceParent is the trace context the execution carries.
	TraceParent string
	// Claimed is when the planner claimed the attempt, Published when it
	// handed the execution to JetStream, Stored when JetStream acknowledged
	// it. Stored minus Due, when positive, is the dispatch lateness: an
	// execution published ahead of its due time (up to the planner's
	// publish lead) is held by the worker until then.
	Claimed, Published, Stored time.Time
}

// Recorded is a result the planner counted for the first time, with what
// it decided follows.
type Recorded struct {
	Result   contracts.Result
	Decision contracts.Decision
}

// Skipped is an occurrence of a job's schedule that came due and did not
// run, and why (one of the Skip reasons).
type Skipped struct {
	// JobKey is the job's KV key.
	JobKey string
	// Occurrence and Expected name the occurrence.
	Occurrence int64
	Expected   time.Time
	// Reason is why it did not run: a metric label, one of SkipReasons.
	Reason string
}

// The reasons an occurrence is skipped. A new reason is added here and to
// SkipReasons, so that its metric series exists from the start.
const (
	// SkipOverlap: an earlier occurrence of the job was in flight and its
	// overlap policy is Skip, or BufferOne with one waiting already.
	SkipOverlap = "overlap"
	// SkipCatchUp: the planners missed the occurrence (they were down or
	// stalled, or the job was scheduled again) and the job's catch-up
	// policy does not run it.
	SkipCatchUp = "catch-up"
)

// SkipReasons are the values of Skipped.Reason.
var SkipReasons = []string{SkipOverlap, SkipCatchUp}
