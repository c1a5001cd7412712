package dispatch

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// scheduleSlot is the slot of a job's next occurrence. The attempts that
// follow an attempt (its retries, the error action) have a slot of their
// own, FollowUpSlot, so that the occurrences of one job retry side by side.
const scheduleSlot = ""

// FollowUpSlot returns the slot of the attempts that follow a failed
// attempt: "r<occurrence>" for an occurrence of the schedule, and for a run
// outside the schedule (occurrence 0) the run's own slot, "x<unix ms>" of
// the time it was requested (its expected time).
func FollowUpSlot(occurrence int64, expected time.Time) string {
	if occurrence == 0 {
		return runSlot(expected)
	}
	return "r" + strconv.FormatInt(occurrence, 10)
}

func runSlot(at time.Time) string { return "x" + strconv.FormatInt(at.UnixMilli(), 10) }

// AttemptIdentity returns the occurrence id and key of an attempt. A run
// outside the schedule (occurrence 0) has its own, its key naming the
// action "<action>/run": it may share its instant with an occurrence of the
// schedule.
func AttemptIdentity(ref contracts.JobRef, occurrence int64, expected time.Time, action contracts.ActionName, attempt int) (id, key string) {
	label := action
	if occurrence == 0 {
		label += "/run"
	}
	return contracts.OccurrenceID(ref, expected, label, attempt), contracts.OccurrenceKey(ref, expected, label, attempt)
}

// nextEntry is the occurrence after a dispatched one, or nil when the job
// has ended (count reached, endTime passed) or it was not an occurrence of
// the schedule (a retry, an error action, a run outside the schedule). A
// late occurrence ran once; the next is no earlier than now.
func nextEntry(c timer.Claim, sched *planner.Schedule, now time.Time) *timer.Entry {
	if c.Slot != scheduleSlot || c.Remaining == 0 || sched == nil {
		return nil
	}
	from := c.Expected
	if late := now.Add(-time.Second); from.Before(late) {
		from = late
	}
	at, ok := sched.Next(from)
	if !ok {
		return nil
	}
	remaining := c.Remaining
	if remaining > 0 {
		remaining--
	}
	return &timer.Entry{
		JobKey: c.JobKey, Slot: scheduleSlot, Due: at, Expected: at,
		Occurrence: c.Occurrence + 1, Action: contracts.MainAction, Remaining: remaining, Revision: c.Revision,
	}
}

// lastOccurrence reports whether the claimed attempt belongs to the job's
// last occurrence: an occurrence of the schedule with none after it, or a
// follow-up attempt of such an occurrence (whose entry has no remaining
// occurrences). A run outside the schedule never is.
func lastOccurrence(c timer.Claim, next *timer.Entry) bool {
	switch {
	case c.Occurrence == 0:
		return false
	case c.Slot == scheduleSlot:
		return next == nil
	}
	return c.Remaining == 0
}

// buildExecution builds the message of a claimed attempt of job j, its
// action's secrets sealed for the attempt and for where the action sends
// them, so that a worker opens them only for the action as sent.
func buildExecution(sealer *seal.Sealer, c timer.Claim, j store.Job, now time.Time, timeout time.Duration, last bool) (*nats.Msg, error) {
	action := j.Properties.Action.ActionOf(c.Action)
	if action == nil {
		return nil, fmt.Errorf("the job has no %s", c.Action)
	}
	id, key := AttemptIdentity(j.Ref, c.Occurrence, c.Expected, c.Action, c.Attempt)
	// The error action is sent as an action of its own: it never carries
	// another.
	single := *action
	single.ErrorAction = nil
	sealed, err := json.Marshal(sealer.SealAction(&single, id))
	if err != nil {
		return nil, err
	}
	exec := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: id, OccurrenceKey: key,
		Job: j.Ref, ActionName: c.Action, Occurrence: c.Occurrence, Attempt: c.Attempt,
		ExpectedTime: c.Expected.UTC(), DispatchedAt: now.UTC(), Action: sealed,
		Timeout: contracts.MillisOf(timeout), Revision: c.Revision,
		LastAttempt:    contracts.LastAttempt(c.Attempt, j.Properties.Action.RetryPolicyOf(c.Action)),
		LastOccurrence: last,
	}
	data, err := json.Marshal(exec)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(contracts.ExecSubjectPrefix + j.Ref.Tokens())
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, exec.OccurrenceID)
	msg.Header.Set(contracts.TraceParentHeader, contracts.TraceParent(id))
	return msg, nil
}
