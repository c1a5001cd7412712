// Package history keeps the job history: the consumer role that stores one
// entry per attempt in the HISTORY stream (every result event, with the
// job's running tally), and the reader the planner lists entries, restores
// tallies and forgets deleted jobs with.
//
// Entries of a job share one subject, scheduler.history.<job tokens>, so
// the stream keeps the newest MaxPerJob of each job. Each entry's header
// Scheduler-Tally carries the job's tally after it; a consumer writes an
// entry only if the job's subject still ends with the entry it computed the
// tally from (Nats-Expected-Last-Subject-Sequence), so any number of history
// consumers may share the work.
package history
