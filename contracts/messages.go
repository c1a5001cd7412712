package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MessageVersion is the version of the Execution, Result and HistoryEntry
// messages this package writes. A consumer rejects a version it does not
// know rather than guess at its fields.
const MessageVersion = 1

// ErrInvalidMessage is wrapped by the Validate methods of the messages, so a
// consumer can tell a message that will never be processable (and should be
// terminated, not redelivered) from a passing failure.
var ErrInvalidMessage = errors.New("invalid message")

// JobRef names a job by its place in the ARM hierarchy.
type JobRef struct {
	Subscription  string `json:"subscription"`
	ResourceGroup string `json:"resourceGroup"`
	Collection    string `json:"collection"`
	Job           string `json:"job"`
}

// Key returns "subscription/resourceGroup/collection/job". None of the parts
// can contain a slash (see ValidateName), so the key is unambiguous.
func (r JobRef) Key() string {
	return r.Subscription + "/" + r.ResourceGroup + "/" + r.Collection + "/" + r.Job
}

// Validate checks each part of the reference with the naming rules.
func (r JobRef) Validate() error {
	return errors.Join(
		ValidateSubscription(r.Subscription),
		ValidateResourceGroup(r.ResourceGroup),
		ValidateName("collection", r.Collection),
		ValidateName("job", r.Job),
	)
}

// OccurrenceKey returns the readable identity of one attempt of one action of
// one occurrence: "sub/rg/collection/job/20260102T051500Z/MainAction/0", with
// the due time in UTC and the 0-based attempt. The due time is written to
// the second, as every occurrence of a schedule falls on one, or to the
// millisecond when it has one (a run asked for now: two asked for in the
// same second are two runs).
func OccurrenceKey(job JobRef, due time.Time, action ActionName, attempt int) string {
	due = due.UTC().Truncate(time.Millisecond)
	layout := "20060102T150405Z"
	if due.Nanosecond() != 0 {
		layout = "20060102T150405.000Z"
	}
	b := append(make([]byte, 0, 80), job.Key()...)
	b = append(b, '/')
	b = due.AppendFormat(b, layout)
	b = append(b, '/')
	b = append(b, action...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(attempt), 10)
	return string(b)
}

// OccurrenceID returns the first 32 hex digits of the SHA-256 of the
// OccurrenceKey. It is deterministic, so a planner that publishes the same
// attempt twice publishes the same id: it is the Nats-Msg-Id of the
// execution, the idempotency key sent to the target and the execution tag.
func OccurrenceID(job JobRef, due time.Time, action ActionName, attempt int) string {
	return OccurrenceIDOf(OccurrenceKey(job, due, action, attempt))
}

// OccurrenceIDOf returns the OccurrenceID of an attempt from its
// OccurrenceKey.
func OccurrenceIDOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// Millis is a duration carried on the wire as whole milliseconds.
type Millis int64

// MillisOf returns d in whole milliseconds, truncated.
func MillisOf(d time.Duration) Millis { return Millis(d / time.Millisecond) }

// Duration returns m as a time.Duration, saturating at the longest one.
func (m Millis) Duration() time.Duration {
	const limit = Millis(math.MaxInt64 / int64(time.Millisecond))
	return time.Duration(min(max(m, -limit), limit)) * time.Millisecond
}

// Execution asks a worker to perform one attempt of an action. The planner
// publishes it with the OccurrenceID as Nats-Msg-Id.
type Execution struct {
	// Version is MessageVersion.
	Version int `json:"v"`
	// OccurrenceID is the attempt's OccurrenceID: the Nats-Msg-Id, the
	// idempotency key sent to the target and the execution tag.
	OccurrenceID string `json:"occurrenceId"`
	// OccurrenceKey is the readable form of OccurrenceID, for logs.
	OccurrenceKey string `json:"occurrenceKey"`
	// Job is the job the action belongs to.
	Job JobRef `json:"job"`
	// ActionName tells the main action from the error action.
	ActionName ActionName `json:"actionName"`
	// Occurrence is the 1-based number of the occurrence (history's
	// repeatCount); 0 for a run requested outside the schedule.
	Occurrence int64 `json:"occurrence"`
	// Attempt is the 0-based retry count within the occurrence.
	Attempt int `json:"attempt"`
	// ExpectedTime is when the occurrence was due; every attempt of the
	// occurrence has the same.
	ExpectedTime time.Time `json:"expectedTime"`
	// DispatchedAt is when the planner claimed the attempt and built the
	// message (at most its lookahead before it is due; it is published at
	// most its publish lead before NotBefore).
	DispatchedAt time.Time `json:"dispatchedAt"`
	// NotBefore is when the attempt is due: a worker holds an execution
	// published ahead of it until then, and never performs it earlier.
	// Zero (in messages of planners that publish at the due time) means
	// at once.
	NotBefore time.Time `json:"notBefore,omitzero"`
	// Action is the JobAction to perform, its secrets sealed by the planner
	// for the OccurrenceID.
	Action json.RawMessage `json:"action"`
	// Timeout is how long the worker may spend on the attempt.
	Timeout Millis `json:"timeoutMs"`
	// Revision is the KV revision of the job definition the attempt was
	// built from.
	Revision uint64 `json:"revision,omitempty"`
	// LastAttempt says that no retry follows if this attempt fails: the
	// retry policy is used up.
	LastAttempt bool `json:"lastAttempt,omitempty"`
	// LastOccurrence says that the job has no occurrence after this one:
	// when it ends, the job is Completed or Faulted.
	LastOccurrence bool `json:"lastOccurrence,omitempty"`
}

// Validate makes light checks that a consumer can act on the message.
func (e Execution) Validate() error {
	var p problems
	p.version(e.Version)
	p.occurrence(e.OccurrenceID, e.Job, e.ActionName, e.Occurrence, e.Attempt)
	p.check(!e.ExpectedTime.IsZero(), "expectedTime is missing")
	p.check(len(e.Action) > 0, "action is missing")
	p.check(e.Timeout > 0, "timeoutMs must be positive")
	return p.err("execution")
}

// Run reports whether the execution is of a run requested outside the
// schedule (POST …/run), which has no occurrence number.
func (e Execution) Run() bool { return e.Occurrence == 0 }

// Outcome is how an attempt ended.
type Outcome string

const (
	// Succeeded means the target accepted the action (for HTTP, a 2xx status).
	Succeeded Outcome = "Succeeded"
	// Failed means the attempt did not succeed; the planner retries it or
	// runs the error action.
	Failed Outcome = "Failed"
)

// Result reports one attempt, published by the worker that performed it as
// the data of a CloudEvent (see ResultEvent).
type Result struct {
	// Version is MessageVersion.
	Version int `json:"v"`
	// OccurrenceID, OccurrenceKey, Job, ActionName, Occurrence, Attempt,
	// ExpectedTime, Revision, LastAttempt and LastOccurrence are copied from
	// the Execution.
	OccurrenceID   string     `json:"occurrenceId"`
	OccurrenceKey  string     `json:"occurrenceKey"`
	Job            JobRef     `json:"job"`
	ActionName     ActionName `json:"actionName"`
	Occurrence     int64      `json:"occurrence"`
	Attempt        int        `json:"attempt"`
	ExpectedTime   time.Time  `json:"expectedTime"`
	Revision       uint64     `json:"revision,omitempty"`
	LastAttempt    bool       `json:"lastAttempt,omitempty"`
	LastOccurrence bool       `json:"lastOccurrence,omitempty"`
	// ActionType is the type of the action performed.
	ActionType ActionType `json:"actionType"`
	// StartTime and EndTime bound the attempt as the worker measured it.
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	// Outcome is how the attempt ended.
	Outcome Outcome `json:"outcome"`
	// StatusCode is the HTTP status the target answered with, when it
	// answered over HTTP.
	StatusCode int `json:"statusCode,omitempty"`
	// Error says why the attempt failed.
	Error string `json:"error,omitempty"`
	// Message is the text of the history entry.
	Message string `json:"message"`
	// Response is the start of the target's response body, at most 2,048
	// bytes.
	Response string `json:"response,omitempty"`
	// Worker names the worker that performed the attempt.
	Worker string `json:"worker,omitempty"`
}

// Result returns the result of the execution's attempt, with the fields
// copied from the execution filled in.
func (e Execution) Result(actionType ActionType) Result {
	return Result{
		Version: MessageVersion, OccurrenceID: e.OccurrenceID, OccurrenceKey: e.OccurrenceKey, Job: e.Job,
		ActionName: e.ActionName, Occurrence: e.Occurrence, Attempt: e.Attempt, ExpectedTime: e.ExpectedTime,
		Revision: e.Revision, LastAttempt: e.LastAttempt, LastOccurrence: e.LastOccurrence, ActionType: actionType,
	}
}

// Validate makes light checks that a consumer can act on the message.
func (r Result) Validate() error {
	var p problems
	p.version(r.Version)
	p.occurrence(r.OccurrenceID, r.Job, r.ActionName, r.Occurrence, r.Attempt)
	if r.Outcome != Succeeded && r.Outcome != Failed {
		p.addf("outcome %q is not Succeeded or Failed", r.Outcome)
	}
	p.check(!r.StartTime.IsZero() && !r.EndTime.Before(r.StartTime), "startTime is missing or after endTime")
	return p.err("result")
}

// HistoryEntry makes the history entry of the result. Its ID is set when it
// is read back, from the history stream's sequence number (see HistoryID).
func (r Result) HistoryEntry() HistoryEntry {
	status := StatusCompleted
	if r.Outcome != Succeeded {
		status = StatusFailed
	}
	return HistoryEntry{
		Version:      MessageVersion,
		OccurrenceID: r.OccurrenceID,
		Job:          r.Job,
		ActionName:   r.ActionName,
		Status:       status,
		Message:      r.Message,
		StartTime:    r.StartTime,
		EndTime:      r.EndTime,
		ExpectedTime: r.ExpectedTime,
		RetryCount:   r.Attempt,
		RepeatCount:  r.Occurrence,
	}
}

// HistoryEntry is one stored execution attempt, as the history consumer
// writes it and the API lists it.
type HistoryEntry struct {
	// Version is MessageVersion.
	Version int `json:"v"`
	// OccurrenceID is the attempt's OccurrenceID.
	OccurrenceID string `json:"occurrenceId"`
	// Job is the job the attempt belongs to.
	Job JobRef `json:"job"`
	// ID is the entry's HistoryID, its name in the API; it is not stored,
	// but set from the entry's sequence number when it is read.
	ID string `json:"-"`
	// ActionName tells the main action from the error action.
	ActionName ActionName `json:"actionName"`
	// Status is Completed or Failed.
	Status ExecutionStatus `json:"status"`
	// Message is the text the API shows.
	Message string `json:"message"`
	// StartTime, EndTime and ExpectedTime are those of the Result.
	StartTime    time.Time `json:"startTime"`
	EndTime      time.Time `json:"endTime"`
	ExpectedTime time.Time `json:"expectedTime"`
	// RetryCount is the 0-based attempt within the occurrence.
	RetryCount int `json:"retryCount"`
	// RepeatCount is the 1-based occurrence number.
	RepeatCount int64 `json:"repeatCount"`
}

// Properties returns the entry as the API shows it. A completed attempt has
// no status, as in the original service.
func (h HistoryEntry) Properties() JobHistoryDefinitionProperties {
	status := h.Status
	if status == StatusCompleted {
		status = ""
	}
	return JobHistoryDefinitionProperties{
		StartTime:             timeOrNil(h.StartTime),
		EndTime:               timeOrNil(h.EndTime),
		ExpectedExecutionTime: timeOrNil(h.ExpectedTime),
		ActionName:            h.ActionName,
		Status:                status,
		Message:               h.Message,
		RetryCount:            h.RetryCount,
		RepeatCount:           int(h.RepeatCount),
	}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// .NET ticks (100 ns since 0001-01-01 UTC) of the history id.
const (
	maxDotNetTicks = 3155378975999999999 // DateTime.MaxValue.Ticks
	unixEpochTicks = 621355968000000000
	minHistoryUnix = -62135596800 // 0001-01-01T00:00:00Z
	maxHistoryUnix = 253402300799 // 9999-12-31T23:59:59Z
	ticksPerSecond = int64(time.Second / 100)
	nanosPerTick   = 100
)

// HistoryID returns a history entry id in the original service's format,
// two 20-digit numbers "DDDDDDDDDDDDDDDDDDDD:SSSSSSSSSSSSSSSSSSSS": the first
// is DateTime.MaxValue.Ticks minus start in .NET ticks, the second
// math.MaxInt64 minus seq. Compared as strings, newer starts sort first, and
// of two entries with the same start the later seq first. Starts outside the
// years 1 to 9999 are clamped into them.
func HistoryID(start time.Time, seq uint64) string {
	unix := start.Unix()
	ticks := unixEpochTicks + min(max(unix, minHistoryUnix), maxHistoryUnix)*ticksPerSecond
	if unix >= minHistoryUnix && unix <= maxHistoryUnix {
		ticks += int64(start.Nanosecond() / nanosPerTick)
	}
	rest := int64(0)
	if seq <= math.MaxInt64 {
		rest = math.MaxInt64 - int64(seq)
	}
	return fmt.Sprintf("%020d:%020d", maxDotNetTicks-ticks, rest)
}

// problems collects what is wrong with a message.
type problems []string

func (p *problems) check(ok bool, problem string) {
	if !ok {
		*p = append(*p, problem)
	}
}

// hex32 reports whether s is 32 hex digits, as hex.DecodeString reads them.
func hex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// addf adds a formatted problem. The checks on the path of every action
// format their problem only when there is one.
func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

func (p *problems) version(v int) {
	if v != MessageVersion {
		p.addf("version %d is not the supported version %d", v, MessageVersion)
	}
}

// occurrence checks the fields that identify an attempt.
func (p *problems) occurrence(id string, job JobRef, action ActionName, occurrence int64, attempt int) {
	if !hex32(id) {
		p.addf("occurrenceId %q is not 32 hex digits", id)
	}
	if err := job.Validate(); err != nil {
		*p = append(*p, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if !slices.Contains(ActionNames, action) {
		p.addf("actionName %q is not one of %s", action, EnumList(ActionNames))
	}
	p.check(occurrence >= 0, "occurrence must not be negative")
	p.check(attempt >= 0, "attempt must not be negative")
}

func (p problems) err(what string) error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalidMessage, what, strings.Join(p, "; "))
}
