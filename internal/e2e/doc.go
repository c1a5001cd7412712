// Package e2e holds the end-to-end tests of the scheduler: the planner,
// workers and the history consumer run together against an embedded NATS
// server and the tests' Redis, jobs are created through the REST API, and
// the tests watch the targets (local HTTP servers, Azurite, the Service Bus
// peer), the jobs' status and their history.
package e2e
