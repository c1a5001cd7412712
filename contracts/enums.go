package contracts

import "strings"

// JobState is the state of a job. Users may set Enabled or Disabled; the
// scheduler sets Completed and Faulted, which are final.
type JobState string

const (
	JobStateEnabled   JobState = "Enabled"
	JobStateDisabled  JobState = "Disabled"
	JobStateFaulted   JobState = "Faulted"
	JobStateCompleted JobState = "Completed"
)

// JobCollectionState is the state of a job collection. In a Suspended
// collection nothing fires.
type JobCollectionState string

const (
	JobCollectionStateEnabled   JobCollectionState = "Enabled"
	JobCollectionStateDisabled  JobCollectionState = "Disabled"
	JobCollectionStateSuspended JobCollectionState = "Suspended"
	JobCollectionStateDeleted   JobCollectionState = "Deleted"
)

// SkuName is a job collection's plan; it sets the default quota.
type SkuName string

const (
	SkuStandard   SkuName = "Standard"
	SkuFree       SkuName = "Free"
	SkuP10Premium SkuName = "P10Premium"
	SkuP20Premium SkuName = "P20Premium"
)

// ActionType says what an action does.
type ActionType string

const (
	ActionHTTP            ActionType = "Http"
	ActionHTTPS           ActionType = "Https"
	ActionStorageQueue    ActionType = "StorageQueue"
	ActionServiceBusQueue ActionType = "ServiceBusQueue"
	ActionServiceBusTopic ActionType = "ServiceBusTopic"
)

// Frequency is the unit of a recurrence. Year is an extension the original
// documents describe but the 2016-03-01 swagger lacks.
type Frequency string

const (
	FrequencyMinute Frequency = "Minute"
	FrequencyHour   Frequency = "Hour"
	FrequencyDay    Frequency = "Day"
	FrequencyWeek   Frequency = "Week"
	FrequencyMonth  Frequency = "Month"
	FrequencyYear   Frequency = "Year"
)

// RetryType says whether a failed action is retried.
type RetryType string

const (
	RetryNone  RetryType = "None"
	RetryFixed RetryType = "Fixed"
)

// ActionName tells the main action from the error action in history.
type ActionName string

const (
	MainAction  ActionName = "MainAction"
	ErrorAction ActionName = "ErrorAction"
)

// ExecutionStatus is the status of one execution attempt in history.
type ExecutionStatus string

const (
	StatusCompleted ExecutionStatus = "Completed"
	StatusFailed    ExecutionStatus = "Failed"
	StatusPostponed ExecutionStatus = "Postponed"
)

// HTTPAuthenticationType is the kind of outbound authentication of an HTTP action.
type HTTPAuthenticationType string

const (
	HTTPAuthNotSpecified         HTTPAuthenticationType = "NotSpecified"
	HTTPAuthClientCertificate    HTTPAuthenticationType = "ClientCertificate"
	HTTPAuthActiveDirectoryOAuth HTTPAuthenticationType = "ActiveDirectoryOAuth"
	HTTPAuthBasic                HTTPAuthenticationType = "Basic"
)

// ServiceBusAuthenticationType is the kind of Service Bus authentication.
type ServiceBusAuthenticationType string

const (
	ServiceBusAuthNotSpecified    ServiceBusAuthenticationType = "NotSpecified"
	ServiceBusAuthSharedAccessKey ServiceBusAuthenticationType = "SharedAccessKey"
)

// ServiceBusTransportType is accepted for compatibility; messages are always
// sent over AMQP.
type ServiceBusTransportType string

const (
	TransportNotSpecified ServiceBusTransportType = "NotSpecified"
	TransportNetMessaging ServiceBusTransportType = "NetMessaging"
	TransportAMQP         ServiceBusTransportType = "AMQP"
)

// DayOfWeek names a day in weekDays and monthlyOccurrences.
type DayOfWeek string

const (
	Monday    DayOfWeek = "Monday"
	Tuesday   DayOfWeek = "Tuesday"
	Wednesday DayOfWeek = "Wednesday"
	Thursday  DayOfWeek = "Thursday"
	Friday    DayOfWeek = "Friday"
	Saturday  DayOfWeek = "Saturday"
	Sunday    DayOfWeek = "Sunday"
)

// CatchUpPolicy says which missed occurrences of a recurring job run when
// the planners come back after an outage, or the job is enabled again (an
// extension). The zero value is CatchUpEarliest, the behaviour of a job
// that does not name a policy.
type CatchUpPolicy string

const (
	// CatchUpEarliest: after an outage the earliest missed occurrence runs
	// once, late, and the job goes on from its next instant; a job enabled
	// again runs none it missed while disabled (beyond the planners'
	// missed-grace).
	CatchUpEarliest CatchUpPolicy = "Earliest"
	// CatchUpSkip: no missed occurrence runs.
	CatchUpSkip CatchUpPolicy = "Skip"
	// CatchUpLatest: the most recent missed occurrence runs once.
	CatchUpLatest CatchUpPolicy = "Latest"
	// CatchUpAll: each missed occurrence within catchUpWindow runs, in
	// order, at a bounded rate.
	CatchUpAll CatchUpPolicy = "All"
)

// OverlapPolicy says what happens when an occurrence of a recurring job
// comes due while the previous one is still running or waiting for a retry
// (an extension). The zero value is OverlapAllow.
type OverlapPolicy string

const (
	OverlapAllow     OverlapPolicy = "Allow"     // both run
	OverlapSkip      OverlapPolicy = "Skip"      // the new occurrence does not run
	OverlapBufferOne OverlapPolicy = "BufferOne" // it runs when the previous ends; one waits at most
)

// ExcludedDayAction says what happens to an occurrence whose local date an
// excluded calendar holds (an extension). The zero value is
// ExcludedDaySkip.
type ExcludedDayAction string

const (
	ExcludedDaySkip         ExcludedDayAction = "Skip"
	ExcludedDayNextBusiness ExcludedDayAction = "NextBusinessDay"
	ExcludedDayPrevBusiness ExcludedDayAction = "PreviousBusinessDay"
)

// The canonical values of each enum, in documentation order.
var (
	JobStates           = []JobState{JobStateEnabled, JobStateDisabled, JobStateFaulted, JobStateCompleted}
	JobCollectionStates = []JobCollectionState{JobCollectionStateEnabled, JobCollectionStateDisabled, JobCollectionStateSuspended, JobCollectionStateDeleted}
	SkuNames            = []SkuName{SkuStandard, SkuFree, SkuP10Premium, SkuP20Premium}
	ActionTypes         = []ActionType{ActionHTTP, ActionHTTPS, ActionStorageQueue, ActionServiceBusQueue, ActionServiceBusTopic}
	Frequencies         = []Frequency{FrequencyMinute, FrequencyHour, FrequencyDay, FrequencyWeek, FrequencyMonth, FrequencyYear}
	RetryTypes          = []RetryType{RetryNone, RetryFixed}
	ActionNames         = []ActionName{MainAction, ErrorAction}
	ExecutionStatuses   = []ExecutionStatus{StatusCompleted, StatusFailed, StatusPostponed}
	HTTPAuthTypes       = []HTTPAuthenticationType{HTTPAuthNotSpecified, HTTPAuthClientCertificate, HTTPAuthActiveDirectoryOAuth, HTTPAuthBasic}
	ServiceBusAuthTypes = []ServiceBusAuthenticationType{ServiceBusAuthNotSpecified, ServiceBusAuthSharedAccessKey}
	TransportTypes      = []ServiceBusTransportType{TransportNotSpecified, TransportNetMessaging, TransportAMQP}
	DaysOfWeek          = []DayOfWeek{Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday}
	CatchUpPolicies     = []CatchUpPolicy{CatchUpEarliest, CatchUpSkip, CatchUpLatest, CatchUpAll}
	OverlapPolicies     = []OverlapPolicy{OverlapAllow, OverlapSkip, OverlapBufferOne}
	ExcludedDayActions  = []ExcludedDayAction{ExcludedDaySkip, ExcludedDayNextBusiness, ExcludedDayPrevBusiness}
)

// ParseEnum returns the canonical value of values that equals s ignoring case.
func ParseEnum[T ~string](s string, values []T) (T, bool) {
	for _, v := range values {
		if strings.EqualFold(string(v), s) {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// EnumList renders the canonical values for an error message: "A, B or C".
func EnumList[T ~string](values []T) string {
	var b strings.Builder
	for i, v := range values {
		switch {
		case i == 0:
		case i == len(values)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}
