package contracts

import "time"

// Resource types of the ARM envelopes.
const (
	JobCollectionResourceType = "Microsoft.Scheduler/jobCollections"
	JobResourceType           = "Microsoft.Scheduler/jobCollections/jobs"
	JobHistoryResourceType    = "Microsoft.Scheduler/jobCollections/jobs/history"
)

// JobDefinition is a job in its ARM envelope.
type JobDefinition struct {
	ID         string        `json:"id,omitempty"`
	Type       string        `json:"type,omitempty"`
	Name       string        `json:"name,omitempty"`
	Properties JobProperties `json:"properties"`
}

// JobProperties is what a user defines about a job, plus its read-only status.
type JobProperties struct {
	// StartTime is the resolved start instant: a date-time without an offset
	// is read as UTC, or as local time in Recurrence.TimeZone when one is set.
	// Fractional seconds are dropped.
	StartTime  *time.Time  `json:"startTime,omitempty"`
	Action     *JobAction  `json:"action,omitempty"`
	Recurrence *Recurrence `json:"recurrence,omitempty"`
	State      JobState    `json:"state,omitempty"`
	Status     *JobStatus  `json:"status,omitempty"`
	// SetSecrets lists the secret fields of the action and its error
	// actions that hold a value ("action.request.authentication.password",
	// "action.errorAction.queueMessage.sasToken"), whose values the API
	// never shows: an extension, filled in by the API and never taken from
	// input.
	SetSecrets []string `json:"setSecrets,omitempty"`

	// The scheduling policies below are extensions to the 2016-03-01 API;
	// a job that names none behaves as a job of the original service.

	// CatchUp says which missed occurrences run after an outage or when
	// the job is enabled again; empty means CatchUpEarliest.
	CatchUp CatchUpPolicy `json:"catchUp,omitempty"`
	// CatchUpWindow (ISO 8601 or TimeSpan, kept as given) bounds how far
	// back CatchUpAll reaches: missed occurrences older than it are
	// skipped. Only with CatchUpAll; empty means one day.
	CatchUpWindow string `json:"catchUpWindow,omitempty"`
	// Overlap says what happens to an occurrence due while the previous
	// one still runs or waits for a retry; empty means OverlapAllow.
	Overlap OverlapPolicy `json:"overlap,omitempty"`
	// PauseAfterFaults disables the job after that many consecutive
	// Faulted occurrences (every attempt of each failed), with the reason
	// in its status and history. Nil: never.
	PauseAfterFaults *int `json:"pauseAfterFaults,omitempty"`
}

// SecretsSet returns the secret fields of the action and its error actions
// that hold a value, as SetSecrets names them.
func (p JobProperties) SecretsSet() []string {
	var out []string
	prefix := "action."
	for a := p.Action; a != nil; a = a.ErrorAction {
		for _, s := range a.Secrets() {
			if *s.Value != "" {
				out = append(out, prefix+s.Field)
			}
		}
		prefix += "errorAction."
	}
	return out
}

// JobStatus is maintained by the scheduler; it is never taken from input.
type JobStatus struct {
	LastExecutionTime *time.Time `json:"lastExecutionTime,omitempty"`
	NextExecutionTime *time.Time `json:"nextExecutionTime,omitempty"`
	ExecutionCount    int        `json:"executionCount"`
	FailureCount      int        `json:"failureCount"`
	FaultedCount      int        `json:"faultedCount"`
	// LastStatus says how the latest attempt of the job's main action
	// ended: Succeeded, Failed, or Faulted when it failed its occurrence's
	// last retry (Tally.LastStatus). Absent before the first attempt. An
	// extension to the 2016-03-01 API.
	LastStatus *string `json:"lastStatus,omitempty"`
	// ConsecutiveFaults counts the Faulted occurrences since the last one
	// that succeeded (an extension, kept for PauseAfterFaults).
	ConsecutiveFaults int `json:"consecutiveFaults,omitempty"`
	// StateReason says why the scheduler changed the job's state, as when
	// PauseAfterFaults disabled it (an extension). Absent otherwise.
	StateReason string `json:"stateReason,omitempty"`
}

// Recurrence says how often a job repeats. A job without one runs once.
type Recurrence struct {
	Frequency Frequency `json:"frequency,omitempty"`
	// Interval is the number of frequency units between periods. Nil means 1.
	Interval *int `json:"interval,omitempty"`
	// Count is the number of occurrences after which the job completes. Nil
	// means no limit.
	Count *int `json:"count,omitempty"`
	// EndTime is the last instant an occurrence may have (inclusive).
	EndTime  *time.Time `json:"endTime,omitempty"`
	Schedule *Schedule  `json:"schedule,omitempty"`
	// TimeZone is an IANA zone name (an extension to the 2016-03-01 API). Hours,
	// minutes and days of the schedule are wall-clock values there. Empty means
	// UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// FlexibleWindow (an extension; ISO 8601 or TimeSpan, kept as given, at
	// most the recurrence's period) lets each occurrence run at an offset
	// within the window after its instant, derived from the job and the
	// instant: the same for the same occurrence, spread evenly over many
	// jobs, never before the instant.
	FlexibleWindow string `json:"flexibleWindow,omitempty"`
	// ExcludedCalendars names calendars of the job's collection (an
	// extension): an occurrence whose local date one of them holds does
	// not run on that date; OnExcludedDay says what happens instead.
	ExcludedCalendars []string `json:"excludedCalendars,omitempty"`
	// OnExcludedDay: skip the occurrence (the default), or move it to the
	// same time on the next or previous business day.
	OnExcludedDay ExcludedDayAction `json:"onExcludedDay,omitempty"`
}

// IntervalOrDefault returns the interval, 1 when none is set.
func (r *Recurrence) IntervalOrDefault() int {
	if r == nil || r.Interval == nil {
		return 1
	}
	return *r.Interval
}

// Schedule refines or expands a recurrence. A nil slice means the element was
// not given; a non-nil empty slice means it was given empty (which validation
// rejects).
type Schedule struct {
	WeekDays           []DayOfWeek         `json:"weekDays,omitempty"`
	Hours              []int               `json:"hours,omitempty"`
	Minutes            []int               `json:"minutes,omitempty"`
	MonthDays          []int               `json:"monthDays,omitempty"`
	MonthlyOccurrences []MonthlyOccurrence `json:"monthlyOccurrences,omitempty"`
	// MonthlyBusinessDays (an extension, frequency month only) names
	// business days of the month: 1 is the first, -1 the last. A business
	// day is a Monday to Friday that no excluded calendar holds.
	MonthlyBusinessDays []int `json:"monthlyBusinessDays,omitempty"`
}

// MonthlyOccurrence names a weekday within a month: {Friday, 1} is the first
// Friday, {Friday, -1} the last, and {Friday, nil} every Friday.
type MonthlyOccurrence struct {
	Day DayOfWeek `json:"day"`
	// Occurrence is ±1…±5, or nil for every such day. The swagger spells the
	// property with a capital O; input accepts any case.
	Occurrence *int `json:"Occurrence,omitempty"`
}

// JobAction is what a job does at each occurrence. Exactly one of Request,
// QueueMessage, ServiceBusQueueMessage and ServiceBusTopicMessage is set,
// matching Type.
type JobAction struct {
	Type                   ActionType              `json:"type,omitempty"`
	Request                *HTTPRequest            `json:"request,omitempty"`
	QueueMessage           *StorageQueueMessage    `json:"queueMessage,omitempty"`
	ServiceBusQueueMessage *ServiceBusQueueMessage `json:"serviceBusQueueMessage,omitempty"`
	ServiceBusTopicMessage *ServiceBusTopicMessage `json:"serviceBusTopicMessage,omitempty"`
	RetryPolicy            *RetryPolicy            `json:"retryPolicy,omitempty"`
	// ErrorAction runs once when every attempt of an occurrence failed. An
	// error action cannot have an error action of its own; the field exists
	// here so that validation can say so.
	ErrorAction *JobAction `json:"errorAction,omitempty"`
}

// HTTPRequest is the request of an Http or Https action.
type HTTPRequest struct {
	Authentication *HTTPAuthentication `json:"authentication,omitempty"`
	URI            string              `json:"uri,omitempty"`
	Method         string              `json:"method,omitempty"`
	Body           string              `json:"body,omitempty"`
	Headers        map[string]string   `json:"headers,omitempty"`
}

// HTTPAuthentication is one of the three outbound authentication kinds,
// told apart by Type. Password, Pfx and Secret are never returned.
type HTTPAuthentication struct {
	Type HTTPAuthenticationType `json:"type,omitempty"`

	// Basic.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"` // also the PFX password

	// ClientCertificate.
	Pfx                       string     `json:"pfx,omitempty"` // base64 PKCS#12
	CertificateThumbprint     string     `json:"certificateThumbprint,omitempty"`
	CertificateExpirationDate *time.Time `json:"certificateExpirationDate,omitempty"`
	CertificateSubjectName    string     `json:"certificateSubjectName,omitempty"`

	// ActiveDirectoryOAuth.
	Secret   string `json:"secret,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Audience string `json:"audience,omitempty"`
	ClientID string `json:"clientId,omitempty"`
}

// StorageQueueMessage is the payload of a StorageQueue action.
type StorageQueueMessage struct {
	StorageAccount string `json:"storageAccount,omitempty"`
	QueueName      string `json:"queueName,omitempty"`
	SASToken       string `json:"sasToken,omitempty"`
	Message        string `json:"message,omitempty"`
}

// ServiceBusMessage is what Service Bus queue and topic actions share.
type ServiceBusMessage struct {
	Authentication            *ServiceBusAuthentication  `json:"authentication,omitempty"`
	BrokeredMessageProperties *BrokeredMessageProperties `json:"brokeredMessageProperties,omitempty"`
	CustomMessageProperties   map[string]string          `json:"customMessageProperties,omitempty"`
	Message                   string                     `json:"message,omitempty"`
	Namespace                 string                     `json:"namespace,omitempty"`
	TransportType             ServiceBusTransportType    `json:"transportType,omitempty"`
}

// ServiceBusQueueMessage is the payload of a ServiceBusQueue action.
type ServiceBusQueueMessage struct {
	ServiceBusMessage
	QueueName string `json:"queueName,omitempty"`
}

// ServiceBusTopicMessage is the payload of a ServiceBusTopic action.
type ServiceBusTopicMessage struct {
	ServiceBusMessage
	TopicPath string `json:"topicPath,omitempty"`
}

// ServiceBusAuthentication holds a shared access key. SASKey is never returned.
type ServiceBusAuthentication struct {
	SASKey     string                       `json:"sasKey,omitempty"`
	SASKeyName string                       `json:"sasKeyName,omitempty"`
	Type       ServiceBusAuthenticationType `json:"type,omitempty"`
}

// BrokeredMessageProperties are the Service Bus message properties a job may set.
type BrokeredMessageProperties struct {
	ContentType             string     `json:"contentType,omitempty"`
	CorrelationID           string     `json:"correlationId,omitempty"`
	ForcePersistence        *bool      `json:"forcePersistence,omitempty"`
	Label                   string     `json:"label,omitempty"`
	MessageID               string     `json:"messageId,omitempty"`
	PartitionKey            string     `json:"partitionKey,omitempty"`
	ReplyTo                 string     `json:"replyTo,omitempty"`
	ReplyToSessionID        string     `json:"replyToSessionId,omitempty"`
	ScheduledEnqueueTimeUTC *time.Time `json:"scheduledEnqueueTimeUtc,omitempty"`
	SessionID               string     `json:"sessionId,omitempty"`
	// TimeToLive is kept as given (ISO 8601 or TimeSpan text); see ParseDuration.
	TimeToLive      string `json:"timeToLive,omitempty"`
	To              string `json:"to,omitempty"`
	ViaPartitionKey string `json:"viaPartitionKey,omitempty"`
}

// RetryPolicy says whether and how a failed action is retried.
type RetryPolicy struct {
	RetryType RetryType `json:"retryType,omitempty"`
	// RetryInterval is kept as given, ISO 8601 (PT30S) or .NET TimeSpan
	// (00:00:30), and echoed as given; see ParseDuration.
	RetryInterval string `json:"retryInterval,omitempty"`
	RetryCount    *int   `json:"retryCount,omitempty"`
}

// ActionOf returns the named action of a job whose main action is a: a
// itself, or its error action (nil when it has none).
func (a *JobAction) ActionOf(name ActionName) *JobAction {
	if a == nil || name != ErrorAction {
		return a
	}
	return a.ErrorAction
}

// RetryPolicyOf returns the retry policy that applies to the named action
// of a job whose main action is a: the main action's own, or the error
// action's own, falling back to the main action's when it has none (the
// original documentation: the same policy applies to both).
func (a *JobAction) RetryPolicyOf(name ActionName) *RetryPolicy {
	if a == nil {
		return nil
	}
	if e := a.ErrorAction; name == ErrorAction && e != nil && e.RetryPolicy != nil {
		return e.RetryPolicy
	}
	return a.RetryPolicy
}
