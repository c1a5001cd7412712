// Package planner decides when jobs run: it validates job definitions and
// computes their occurrences with the recurrence engine (recurrence.go), and
// will hold the job store, the REST API and NATS intake, the Redis timer and
// dispatch, and the result feedback loop.
package planner
