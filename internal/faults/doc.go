// Package faults is the scheduler's fault suite: it runs the real binary
// as separate processes (two planners, three workers and the history role)
// against a 3-node JetStream cluster and a Redis of its own, creates jobs
// that call a recording HTTP sink, kills, pauses and restarts every part
// while the jobs run, and checks that no occurrence was lost, none ran
// early or twice under different keys, the counters and history agree with
// what the targets saw, the API never failed, and every part came back.
//
// The tests run only when SCHEDULER_FAULTS is "short" (about two minutes
// of faults; what CI runs) or "full" (every fault three times, with the
// default lease; `task faults`), and need redis-server on the PATH.
package faults
