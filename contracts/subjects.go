package contracts

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of the JetStream resources every role shares.
const (
	// JobsBucket is the KV bucket of job collections and jobs: the source of
	// truth.
	JobsBucket = "scheduler-jobs"
	// ExecStream holds execution messages (work-queue retention).
	ExecStream = "EXEC"
	// WorkersConsumer is the durable pull consumer on ExecStream that every
	// worker shares.
	WorkersConsumer = "workers"
	// ResultsStream holds one result event per attempt.
	ResultsStream = "RESULTS"
	// PlannerConsumer is the durable consumer on ResultsStream the planners
	// share: retries, the error action, counters and final states.
	PlannerConsumer = "planner"
	// HistoryConsumer is the durable consumer on ResultsStream the history
	// consumers share: it stores every result as a history entry.
	HistoryConsumer = "history"
	// HistoryStream holds the history entries the API serves.
	HistoryStream = "HISTORY"
	// IntakeStream holds job definitions published for the planner to apply.
	IntakeStream = "INTAKE"
)

// Subject prefixes; a job's subject ends with its tokens (see JobTokens).
const (
	ExecSubjectPrefix    = "scheduler.exec."
	ResultSubjectPrefix  = "scheduler.results."
	HistorySubjectPrefix = "scheduler.history."
	// IntakeSubjectPrefix takes job definitions onto the durable INTAKE
	// stream: scheduler.intake.jobs.<sub>.<rg>.<collection>.<job>.
	IntakeSubjectPrefix = "scheduler.intake.jobs."
	// RequestSubjectPrefix takes job definitions as requests answered with
	// the stored job or an ARM error body:
	// scheduler.api.jobs.<sub>.<rg>.<collection>.<job>.
	RequestSubjectPrefix = "scheduler.api.jobs."
	// RejectedSubjectPrefix carries an event for each intake message that
	// was rejected.
	RejectedSubjectPrefix = "scheduler.intake.rejected."
	// WorkersDueSubjectPrefix carries each worker's word, on
	// scheduler.workers.due.<worker>, that executions it held came due and
	// wait to be sent ("1") or were all sent ("0"): the other workers keep
	// their results back meanwhile. Core NATS, nothing stored.
	WorkersDueSubjectPrefix = "scheduler.workers.due."
)

// Token encodes one name for use as a subject token or a KV key segment.
// ARM names are case-insensitive, so it folds to lower case; characters
// other than letters, digits, '-' and '_' become "=XX" (hex), which keeps
// '.', '*', '>', '(' and ')' out of subjects and keys.
func Token(name string) string {
	if tokenSafe(name) {
		return name // most names: nothing to fold or escape
	}
	var b strings.Builder
	b.Grow(len(name) * 3)
	for _, c := range []byte(strings.ToLower(name)) {
		switch {
		case tokenByte(c):
			b.WriteByte(c)
		default:
			const hex = "0123456789ABCDEF"
			b.WriteByte('=')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
	}
	return b.String()
}

// tokenByte reports whether Token keeps byte c as it is: a lower-case
// letter, a digit, '-' or '_'.
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// tokenSafe reports whether Token returns name as it is.
func tokenSafe(name string) bool {
	for i := range len(name) {
		if !tokenByte(name[i]) {
			return false
		}
	}
	return true
}

// ParseToken reverses Token: it decodes "=XX" escapes. Letters come back in
// lower case, as Token folded them.
func ParseToken(token string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(token); i++ {
		c := token[i]
		switch {
		case c == '=':
			if i+2 >= len(token) {
				return "", fmt.Errorf("token %q: an escape needs two hex digits", token)
			}
			v, err := strconv.ParseUint(token[i+1:i+3], 16, 8)
			if err != nil {
				return "", fmt.Errorf("token %q: %q is not an escape", token, token[i:i+3])
			}
			b.WriteByte(byte(v))
			i += 2
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			return "", fmt.Errorf("token %q: %q must be escaped", token, c)
		}
	}
	return b.String(), nil
}

// CollectionRef names a job collection by its place in the ARM hierarchy.
type CollectionRef struct {
	Subscription  string `json:"subscription"`
	ResourceGroup string `json:"resourceGroup"`
	Collection    string `json:"collection"`
}

// Tokens returns "<sub>.<rg>.<collection>" as subject tokens.
func (c CollectionRef) Tokens() string {
	return Token(c.Subscription) + "." + Token(c.ResourceGroup) + "." + Token(c.Collection)
}

// KVKey returns the collection's key in JobsBucket: "c.<sub>.<rg>.<collection>".
func (c CollectionRef) KVKey() string { return "c." + c.Tokens() }

// JobsKVPrefix returns the prefix of the keys of the collection's jobs.
func (c CollectionRef) JobsKVPrefix() string { return "j." + c.Tokens() + "." }

// Job returns the reference of the job named name in this collection.
func (c CollectionRef) Job(name string) JobRef {
	return JobRef{Subscription: c.Subscription, ResourceGroup: c.ResourceGroup, Collection: c.Collection, Job: name}
}

// CollectionRef returns the collection the job belongs to.
func (r JobRef) CollectionRef() CollectionRef {
	return CollectionRef{Subscription: r.Subscription, ResourceGroup: r.ResourceGroup, Collection: r.Collection}
}

// Tokens returns "<sub>.<rg>.<collection>.<job>" as subject tokens.
func (r JobRef) Tokens() string { return r.tokensAfter("") }

// KVKey returns the job's key in JobsBucket: "j.<sub>.<rg>.<collection>.<job>".
func (r JobRef) KVKey() string { return r.tokensAfter(jobKeyPrefix) }

// tokensAfter returns prefix followed by the job's subject tokens, joined
// in one allocation: they are built for every result.
func (r JobRef) tokensAfter(prefix string) string {
	return prefix + Token(r.Subscription) + "." + Token(r.ResourceGroup) + "." + Token(r.Collection) + "." + Token(r.Job)
}

// jobKeyPrefix starts the KV key of every job.
const jobKeyPrefix = "j."

// JobTokensOfKey returns the subject tokens of the job whose KV key is key
// ("j.<sub>.<rg>.<collection>.<job>" gives "<sub>.<rg>.<collection>.<job>"),
// false for a key that is not a job's.
func JobTokensOfKey(key string) (string, bool) {
	tokens, ok := strings.CutPrefix(key, jobKeyPrefix)
	return tokens, ok && tokens != ""
}

// JobKeyOfTokens returns the KV key of the job named by subject tokens.
func JobKeyOfTokens(tokens string) string { return jobKeyPrefix + tokens }

// calendarKeyPrefix starts the KV key of every calendar. It is neither
// "c." nor "j.", so no scan of collections or jobs reads a calendar.
const calendarKeyPrefix = "cal."

// CalendarsKVFilter matches the KV key of every calendar in JobsBucket and
// no other key.
const CalendarsKVFilter = calendarKeyPrefix + ">"

// CalendarsKVPrefix returns the prefix of the keys of the collection's
// calendars: "cal.<sub>.<rg>.<collection>.".
func (c CollectionRef) CalendarsKVPrefix() string { return calendarKeyPrefix + c.Tokens() + "." }

// CalendarKVKey returns the key in JobsBucket of the collection's calendar
// named name: "cal.<sub>.<rg>.<collection>.<calendar>".
func (c CollectionRef) CalendarKVKey(name string) string { return c.CalendarsKVPrefix() + Token(name) }
