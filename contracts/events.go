package contracts

import (
	"fmt"
	"strings"
	"time"
)

// CloudEvents attributes of result events.
const (
	// CloudEventsVersion is the CloudEvents specification version.
	CloudEventsVersion = "1.0"
	// EventSucceeded is the type of the event of an attempt that succeeded.
	EventSucceeded = "com.github.jobscheduler.execution.succeeded"
	// EventFailed is the type of the event of an attempt that failed.
	EventFailed = "com.github.jobscheduler.execution.failed"
	// EventContentType is the content type of an event's data.
	EventContentType = "application/json"
)

// ResultEvent is a Result as a CloudEvents 1.0 event in the structured JSON
// format: the payload of every message on the RESULTS stream.
type ResultEvent struct {
	SpecVersion string `json:"specversion"`
	// ID is the attempt's OccurrenceID: an attempt performed twice (its
	// execution redelivered) gives two events with the same id, and a
	// consumer that keeps one event per id keeps one per attempt.
	ID string `json:"id"`
	// Source is the job's resource id,
	// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{collection}/jobs/{job}.
	Source string `json:"source"`
	// Type is EventSucceeded or EventFailed.
	Type string `json:"type"`
	// Subject names the attempt within the job:
	// "<expected time>/<action name>/<attempt>", as in the OccurrenceKey.
	Subject string `json:"subject"`
	// Time is when the attempt ended.
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            Result    `json:"data"`
}

// JobResourceID returns the ARM resource id of the job.
func JobResourceID(r JobRef) string {
	return "/subscriptions/" + r.Subscription + "/resourceGroups/" + r.ResourceGroup +
		"/providers/Microsoft.Scheduler/jobCollections/" + r.Collection + "/jobs/" + r.Job
}

// Event wraps the result in its CloudEvent.
func (r Result) Event() ResultEvent {
	typ := EventSucceeded
	if r.Outcome != Succeeded {
		typ = EventFailed
	}
	subject := strings.TrimPrefix(r.OccurrenceKey, r.Job.Key()+"/")
	return ResultEvent{
		SpecVersion: CloudEventsVersion, ID: r.OccurrenceID, Source: JobResourceID(r.Job), Type: typ,
		Subject: subject, Time: r.EndTime.UTC(), DataContentType: EventContentType, Data: r,
	}
}

// ParseResultEvent reads a result event and checks that its result can be
// acted on. An error wraps ErrInvalidMessage.
func ParseResultEvent(data []byte) (Result, error) {
	ev, err := decodeResultEvent(data)
	if err != nil {
		return Result{}, fmt.Errorf("%w: result event: %v", ErrInvalidMessage, err)
	}
	if ev.SpecVersion != CloudEventsVersion {
		return Result{}, fmt.Errorf("%w: result event: specversion %q is not %s", ErrInvalidMessage, ev.SpecVersion, CloudEventsVersion)
	}
	if err := ev.Data.Validate(); err != nil {
		return Result{}, err
	}
	return ev.Data, nil
}
