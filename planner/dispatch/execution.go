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
	key = contracts.OccurrenceKey(ref, expected, label, attempt)
	return contracts.OccurrenceIDOf(key), key
}

// nextEntry is the occurrence after a dispatched one, or nil when the job
// has ended (count reached, endTime passed) or it was not an occurrence of
// the schedule (a retry, an error action, a run outside the schedule). A
// late occurrence ran once; the next is no earlier than now. An entry is
// due at its instant's offset within the job's flexible window
// (planner.Schedule.Due), and expected at the instant.
func nextEntry(c timer.Claim, sched *planner.Schedule, now time.Time) *timer.Entry {
	if c.Slot != scheduleSlot || c.Remaining == 0 || sched == nil {
		return nil
	}
	// Late is measured from when the occurrence was due within its
	// flexible window: one published at its offset in the window is on
	// time.
	from := c.Expected
	if late := now.Add(-time.Second).Add(-sched.Due(c.JobKey, c.Expected).Sub(c.Expected)); from.Before(late) {
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
		JobKey: c.JobKey, Slot: scheduleSlot, Due: sched.Due(c.JobKey, at), Expected: at,
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
func buildExecution(sealer *seal.Sealer, c timer.Claim, cj *cached, now time.Time, timeout time.Duration, last bool) (*nats.Msg, error) {
	j := cj.job
	id, key := AttemptIdentity(j.Ref, c.Occurrence, c.Expected, c.Action, c.Attempt)
	sealed, err := cj.actionJSON(sealer, c.Action, id)
	if err != nil {
		return nil, err
	}
	exec := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: id, OccurrenceKey: key,
		Job: j.Ref, ActionName: c.Action, Occurrence: c.Occurrence, Attempt: c.Attempt,
		ExpectedTime: c.Expected.UTC(), DispatchedAt: now.UTC(), NotBefore: c.Due.UTC(), Action: sealed,
		Timeout: contracts.MillisOf(timeout), Revision: c.Revision,
		LastAttempt:    contracts.LastAttempt(c.Attempt, j.Properties.Action.RetryPolicyOf(c.Action)),
		LastOccurrence: last,
	}
	data, err := appendExecution(make([]byte, 0, executionSize+len(sealed)), &exec)
	if err != nil {
		return nil, err
	}
	return &nats.Msg{
		Subject: contracts.ExecSubjectPrefix + j.Ref.Tokens(),
		Data:    data,
		Header: nats.Header{
			jetstream.MsgIDHeader:       {exec.OccurrenceID},
			contracts.TraceParentHeader: {contracts.TraceParent(id)},
		},
	}, nil
}

// actionJSON returns the JSON of the job's action name as the execution of
// attempt id carries it: as an action of its own (the error action never
// carries another), its secrets sealed for the attempt. An action without
// a secret reads the same for every attempt: its JSON is kept with the
// job (a job that changes is cached anew), and shared, never changed.
func (cj *cached) actionJSON(sealer *seal.Sealer, name contracts.ActionName, id string) ([]byte, error) {
	if b, ok := cj.plain.Load(name); ok {
		return b.([]byte), nil
	}
	action := cj.job.Properties.Action.ActionOf(name)
	if action == nil {
		return nil, fmt.Errorf("the job has no %s", name)
	}
	single := *action
	single.ErrorAction = nil
	b, err := json.Marshal(sealer.SealAction(&single, id))
	if err != nil {
		return nil, err
	}
	if !hasSecret(&single) {
		cj.plain.Store(name, b)
	}
	return b, nil
}

// hasSecret reports whether any secret of a is set.
func hasSecret(a *contracts.JobAction) bool {
	for _, s := range a.Secrets() {
		if *s.Value != "" {
			return true
		}
	}
	return false
}

// executionSize is about the size of an execution without its action.
const executionSize = 400

// appendExecution appends x as json.Marshal encodes it, byte for byte,
// without reflection: thousands of executions are built for each second
// that many jobs share. x.Action must be JSON as json.Marshal writes it:
// compact, with <, > and & escaped.
func appendExecution(b []byte, x *contracts.Execution) ([]byte, error) {
	b = strconv.AppendInt(append(b, `{"v":`...), int64(x.Version), 10)
	b = appendJSONString(append(b, `,"occurrenceId":`...), x.OccurrenceID)
	b = appendJSONString(append(b, `,"occurrenceKey":`...), x.OccurrenceKey)
	b = appendJSONString(append(b, `,"job":{"subscription":`...), x.Job.Subscription)
	b = appendJSONString(append(b, `,"resourceGroup":`...), x.Job.ResourceGroup)
	b = appendJSONString(append(b, `,"collection":`...), x.Job.Collection)
	b = appendJSONString(append(b, `,"job":`...), x.Job.Job)
	b = appendJSONString(append(b, `},"actionName":`...), string(x.ActionName))
	b = strconv.AppendInt(append(b, `,"occurrence":`...), x.Occurrence, 10)
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(x.Attempt), 10)
	var err error
	if b, err = appendJSONTime(append(b, `,"expectedTime":`...), x.ExpectedTime); err != nil {
		return nil, err
	}
	if b, err = appendJSONTime(append(b, `,"dispatchedAt":`...), x.DispatchedAt); err != nil {
		return nil, err
	}
	if !x.NotBefore.IsZero() {
		if b, err = appendJSONTime(append(b, `,"notBefore":`...), x.NotBefore); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"action":`...)
	if x.Action == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, x.Action...)
	}
	b = strconv.AppendInt(append(b, `,"timeoutMs":`...), int64(x.Timeout), 10)
	if x.Revision != 0 {
		b = strconv.AppendUint(append(b, `,"revision":`...), x.Revision, 10)
	}
	if x.LastAttempt {
		b = append(b, `,"lastAttempt":true`...)
	}
	if x.LastOccurrence {
		b = append(b, `,"lastOccurrence":true`...)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s quoted as json.Marshal quotes it: directly when
// it holds only printable ASCII that needs no escape, else through
// json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendJSONTime appends t as time.Time.MarshalJSON writes it.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("time %v has a year outside [0,9999]", t)
	}
	return append(t.AppendFormat(append(b, '"'), time.RFC3339Nano), '"'), nil
}
