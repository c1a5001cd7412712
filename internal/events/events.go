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
	// it. Published minus Due is the dispatch lateness.
	Claimed, Published, Stored time.Time
}

// Recorded is a result the planner counted for the first time, with what
// it decided follows.
type Recorded struct {
	Result   contracts.Result
	Decision contracts.Decision
}

// Skipped is an occurrence of a job's schedule that a planner skipped
// without publishing it, for a reason such as SkipCatchUp.
type Skipped struct {
	// JobKey is the job's KV key.
	JobKey string
	// Expected is the occurrence's scheduled time, Occurrence its number.
	Expected   time.Time
	Occurrence int64
	// Reason tells why it was skipped: a metric label.
	Reason string
}

// SkipCatchUp is the reason of an occurrence skipped by the job's catch-up
// policy after the planners missed it.
const SkipCatchUp = "catch-up"
