package contracts

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// utc returns the instant of an RFC 3339 text.
func utc(t *testing.T, s string) *time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return &v
}

// sameJob reports whether a and b hold the same values and instants (time
// zones aside), telling nil from empty slices and maps.
func sameJob(a, b JobProperties) bool {
	a, b = a.Clone(), b.Clone()
	timesToUTC(reflect.ValueOf(&a).Elem())
	timesToUTC(reflect.ValueOf(&b).Elem())
	return reflect.DeepEqual(a, b)
}

var httpAction = `"action":{"type":"Http","request":{"uri":"http://example.com","method":"GET"}}`

func TestDecodeJob(t *testing.T) {
	t.Parallel()

	get := &JobAction{Type: ActionHTTP, Request: &HTTPRequest{URI: "http://example.com", Method: "GET"}}
	tests := []struct {
		name       string
		in         string
		want       func(t *testing.T) JobProperties
		wantPrefix string
	}{
		{
			name: "a bare job is read without a prefix",
			in:   `{"startTime":"2012-08-04T00:00Z",` + httpAction + `,"state":"Enabled"}`,
			want: func(t *testing.T) JobProperties {
				return JobProperties{StartTime: utc(t, "2012-08-04T00:00:00Z"), Action: get, State: JobStateEnabled}
			},
		},
		{
			name: "an envelope is recognised by properties in any case and its other keys are ignored",
			in:   `{"id":"x","type":"y","name":"z","Properties":{` + httpAction + `}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Action: get}
			},
			wantPrefix: "properties.",
		},
		{
			name: "an envelope with null properties is an empty job",
			in:   `{"properties":null}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{}
			},
			wantPrefix: "properties.",
		},
		{
			name: "property names and enum values match in any case",
			in: `{"STARTTIME":"2013-01-09t09:30:00z","Action":{"TYPE":"hTTp","Request":{"URI":"http://x","method":"get"},
				"retrypolicy":{"retrytype":"FIXED","retryinterval":"pt1m","RetryCount":3}},
				"recurrence":{"FREQUENCY":"WEEK","schedule":{"WEEKDAYS":["monDAY"]}},"State":"disabled"}`,
			want: func(t *testing.T) JobProperties {
				return JobProperties{
					StartTime: utc(t, "2013-01-09T09:30:00Z"),
					Action: &JobAction{
						Type:        ActionHTTP,
						Request:     &HTTPRequest{URI: "http://x", Method: "get"},
						RetryPolicy: &RetryPolicy{RetryType: RetryFixed, RetryInterval: "pt1m", RetryCount: ptr(3)},
					},
					Recurrence: &Recurrence{Frequency: FrequencyWeek, Schedule: &Schedule{WeekDays: []DayOfWeek{Monday}}},
					State:      JobStateDisabled,
				}
			},
		},
		{
			name: "schedule elements accept a single value",
			in:   `{"recurrence":{"frequency":"Month","schedule":{"hours":5,"minutes":0,"monthDays":-1,"weekDays":"sunday","monthlyOccurrences":{"day":"friday","Occurrence":1}}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Recurrence: &Recurrence{Frequency: FrequencyMonth, Schedule: &Schedule{
					Hours: []int{5}, Minutes: []int{0}, MonthDays: []int{-1}, WeekDays: []DayOfWeek{Sunday},
					MonthlyOccurrences: []MonthlyOccurrence{{Day: Friday, Occurrence: ptr(1)}},
				}}}
			},
		},
		{
			name: "schedule elements are sorted and duplicates collapse",
			in: `{"recurrence":{"frequency":"Week","schedule":{"hours":[22,10,10.0,5],"minutes":[45,0,45],"monthDays":[1,-1,31,1],
				"weekDays":["Sunday","friday","Monday","FRIDAY"],
				"monthlyOccurrences":[{"day":"Friday","occurrence":-1},{"day":"Monday"},{"day":"Friday"},{"day":"Friday","Occurrence":1},{"day":"friday","occurrence":-1}]}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Recurrence: &Recurrence{Frequency: FrequencyWeek, Schedule: &Schedule{
					Hours: []int{5, 10, 22}, Minutes: []int{0, 45}, MonthDays: []int{-1, 1, 31},
					WeekDays: []DayOfWeek{Monday, Friday, Sunday},
					MonthlyOccurrences: []MonthlyOccurrence{
						{Day: Monday}, {Day: Friday}, {Day: Friday, Occurrence: ptr(-1)}, {Day: Friday, Occurrence: ptr(1)},
					},
				}}}
			},
		},
		{
			name: "an empty array is kept empty and an empty schedule is kept",
			in:   `{"recurrence":{"frequency":"Hour","schedule":{"hours":[],"weekDays":[],"minutes":null}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Recurrence: &Recurrence{Frequency: FrequencyHour, Schedule: &Schedule{Hours: []int{}, WeekDays: []DayOfWeek{}}}}
			},
		},
		{
			name: "an empty schedule object is a schedule with nothing set",
			in:   `{"recurrence":{"frequency":"Day","schedule":{}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Recurrence: &Recurrence{Frequency: FrequencyDay, Schedule: &Schedule{}}}
			},
		},
		{
			name: "integers out of the allowed ranges are kept for validation",
			in:   `{"recurrence":{"frequency":"Minute","interval":5000.0,"count":-1,"schedule":{"hours":[99]}},"action":{"retryPolicy":{"retryType":"Fixed","retryCount":-3}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{
					Recurrence: &Recurrence{Frequency: FrequencyMinute, Interval: ptr(5000), Count: ptr(-1), Schedule: &Schedule{Hours: []int{99}}},
					Action:     &JobAction{RetryPolicy: &RetryPolicy{RetryType: RetryFixed, RetryCount: ptr(-3)}},
				}
			},
		},
		{
			name: "null means absent",
			in:   `{"startTime":null,"action":null,"recurrence":null,"state":null}`,
			want: func(*testing.T) JobProperties { return JobProperties{} },
		},
		{
			name: "the read-only status and unknown properties are ignored",
			in:   `{"status":{"executionCount":"lots"},"color":"blue",` + httpAction + `}`,
			want: func(*testing.T) JobProperties { return JobProperties{Action: get} },
		},
		{
			name: "date-times without an offset are local in the recurrence's time zone",
			in: `{"startTime":"2026-03-07T02:30","recurrence":{"endTime":"2026-12-31","frequency":"Day","timeZone":"America/New_York"},
				"action":{"request":{"authentication":{"certificateExpirationDate":"2030-01-01T00:00"}}}}`,
			want: func(t *testing.T) JobProperties {
				return JobProperties{
					StartTime:  utc(t, "2026-03-07T07:30:00Z"),
					Recurrence: &Recurrence{Frequency: FrequencyDay, EndTime: utc(t, "2026-12-31T05:00:00Z"), TimeZone: "America/New_York"},
					// Only the recurrence's times are local: others are UTC.
					Action: &JobAction{Request: &HTTPRequest{Authentication: &HTTPAuthentication{CertificateExpirationDate: utc(t, "2030-01-01T00:00:00Z")}}},
				}
			},
		},
		{
			name: "date-times with an offset ignore the time zone",
			in:   `{"startTime":"2026-03-07T02:30:00+01:00","recurrence":{"frequency":"Day","timeZone":"America/New_York"}}`,
			want: func(t *testing.T) JobProperties {
				return JobProperties{StartTime: utc(t, "2026-03-07T01:30:00Z"), Recurrence: &Recurrence{Frequency: FrequencyDay, TimeZone: "America/New_York"}}
			},
		},
		{
			name: "an empty time zone is UTC",
			in:   `{"startTime":"2026-03-07T02:30","recurrence":{"frequency":"Day","timeZone":""}}`,
			want: func(t *testing.T) JobProperties {
				return JobProperties{StartTime: utc(t, "2026-03-07T02:30:00Z"), Recurrence: &Recurrence{Frequency: FrequencyDay}}
			},
		},
		{
			name: "headers keep numbers and booleans as their JSON text",
			in:   `{"action":{"type":"Http","request":{"uri":"http://x","method":"POST","body":"{}","headers":{"X-Count":5,"X-Ratio":1.50,"X-On":true,"X-Gone":null,"Content-Type":"application/json"}}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Action: &JobAction{Type: ActionHTTP, Request: &HTTPRequest{URI: "http://x", Method: "POST", Body: "{}",
					Headers: map[string]string{"X-Count": "5", "X-Ratio": "1.50", "X-On": "true", "Content-Type": "application/json"}}}}
			},
		},
		{
			name: "a nested error action is read so that validation can reject it",
			in:   `{"action":{"errorAction":{"errorAction":{"type":"Http"}}}}`,
			want: func(*testing.T) JobProperties {
				return JobProperties{Action: &JobAction{ErrorAction: &JobAction{ErrorAction: &JobAction{Type: ActionHTTP}}}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, errs := DecodeJob([]byte(tt.in))
			if len(errs) > 0 {
				t.Fatalf("DecodeJob: unexpected errors:\n%v", errs)
			}
			if got.Prefix != tt.wantPrefix {
				t.Errorf("Prefix = %q, want %q", got.Prefix, tt.wantPrefix)
			}
			if want := tt.want(t); !sameJob(got.Properties, want) {
				t.Errorf("DecodeJob =\n%s\nwant\n%s", marshalUTC(t, got.Properties), marshalUTC(t, want))
			}
		})
	}
}

func TestDecodeJobReportsEveryProblem(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "invalid JSON is one error naming the byte",
			in:   `{"action": }`,
			want: []string{"invalid JSON at byte 12: invalid character '}' looking for beginning of value"},
		},
		{
			name: "a top level that is not an object is an error",
			in:   `["action"]`,
			want: []string{"the body must be a JSON object"},
		},
		{
			name: "envelope properties that are not an object are an error",
			in:   `{"properties":[]}`,
			want: []string{"properties: must be an object"},
		},
		{
			name: "paths in an envelope start with properties",
			in:   `{"properties":{"recurrence":{"schedule":{"hours":[1,2,"3"]}},"action":{"request":{"headers":{"X-A":{}}}}}}`,
			want: []string{
				"properties.action.request.headers.X-A: must be a string",
				"properties.recurrence.schedule.hours[2]: must be an integer",
			},
		},
		{
			name: "every problem of a bare job is reported with its canonical path",
			in: `{"startTime":"next tuesday","action":{"type":"ftp","retryPolicy":{"retryType":"sometimes","retryInterval":"1 minute","retryCount":1.5}},
				"recurrence":{"timeZone":"Mars/Base","frequency":"fortnight","INTERVAL":"5","count":3000000000,"endTime":"2023-02-29",
				"schedule":{"weekDays":["Mon"],"monthlyOccurrences":[{"occurrence":1},{"day":"Friday","occurrence":"first"}],"minutes":{}}},"state":5}`,
			want: []string{
				`recurrence.timeZone: unknown time zone "Mars/Base"; use an IANA name such as Europe/Berlin`,
				`startTime: "next tuesday" is not an ISO 8601 date-time such as 2026-01-02T15:04:05Z`,
				`action.type: "ftp" is not one of Http, Https, StorageQueue, ServiceBusQueue or ServiceBusTopic`,
				`action.retryPolicy.retryType: "sometimes" is not one of None or Fixed`,
				`action.retryPolicy.retryInterval: "1 minute" is not a duration; use ISO 8601 (PT30S) or hh:mm:ss (00:00:30)`,
				`action.retryPolicy.retryCount: must be an integer`,
				`state: must be a string`,
				`recurrence.frequency: "fortnight" is not one of Minute, Hour, Day, Week, Month or Year`,
				`recurrence.interval: must be an integer`,
				`recurrence.count: must be an integer between -2147483648 and 2147483647`,
				`recurrence.endTime: "2023-02-29" is not an ISO 8601 date-time such as 2026-01-02T15:04:05Z`,
				`recurrence.schedule.weekDays[0]: "Mon" is not one of Monday, Tuesday, Wednesday, Thursday, Friday, Saturday or Sunday`,
				`recurrence.schedule.minutes: must be an integer`,
				`recurrence.schedule.monthlyOccurrences[0].day: required; use one of Monday, Tuesday, Wednesday, Thursday, Friday, Saturday or Sunday`,
				`recurrence.schedule.monthlyOccurrences[1].occurrence: must be an integer`,
			},
		},
		{
			name: "names that differ only in case are given more than once",
			in:   `{"startTime":"2026-01-01","StartTime":"2026-01-02","action":{"type":"Http","Type":"Https"}}`,
			want: []string{
				"startTime: given more than once (property names are case-insensitive)",
				"action.type: given more than once (property names are case-insensitive)",
			},
		},
		{
			name: "the time zone Local is rejected",
			in:   `{"recurrence":{"frequency":"Day","timeZone":"Local"}}`,
			want: []string{`recurrence.timeZone: unknown time zone "Local"; use an IANA name such as Europe/Berlin`},
		},
		{
			name: "payload properties are checked for their types",
			in: `{"action":{"type":"ServiceBusQueue","serviceBusQueueMessage":{"namespace":1,"authentication":[],"transportType":"carrier pigeon",
				"brokeredMessageProperties":{"forcePersistence":"yes","timeToLive":"forever","scheduledEnqueueTimeUtc":"tomorrow"},
				"customMessageProperties":{"a":[]}},"queueMessage":{"sasToken":false},"request":{"authentication":{"type":"Kerberos"}}}}`,
			want: []string{
				`action.request.authentication.type: "Kerberos" is not one of NotSpecified, ClientCertificate, ActiveDirectoryOAuth or Basic`,
				`action.queueMessage.sasToken: must be a string`,
				`action.serviceBusQueueMessage.authentication: must be an object`,
				`action.serviceBusQueueMessage.brokeredMessageProperties.forcePersistence: must be true or false`,
				`action.serviceBusQueueMessage.brokeredMessageProperties.scheduledEnqueueTimeUtc: "tomorrow" is not an ISO 8601 date-time such as 2026-01-02T15:04:05Z`,
				`action.serviceBusQueueMessage.brokeredMessageProperties.timeToLive: "forever" is not a duration; use ISO 8601 (PT30S) or hh:mm:ss (00:00:30)`,
				`action.serviceBusQueueMessage.customMessageProperties.a: must be a string`,
				`action.serviceBusQueueMessage.namespace: must be a string`,
				`action.serviceBusQueueMessage.transportType: "carrier pigeon" is not one of NotSpecified, NetMessaging or AMQP`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := DecodeJob([]byte(tt.in))
			assertErrorList(t, errs, tt.want)
		})
	}
}

func TestDecodeJobSizeLimit(t *testing.T) {
	t.Parallel()

	body := strings.Repeat("x", MaxJobBytes)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "a job over the limit is reported and still read",
			in:   `{"action":{"type":"Http","request":{"body":"` + body + `"}},"state":"Paused"}`,
			want: []string{
				"the job definition is {size} bytes; the limit is 16384 bytes (16 KB)",
				`state: "Paused" is not one of Enabled, Disabled, Faulted or Completed`,
			},
		},
		{
			name: "a job over the limit with invalid JSON reports both",
			in:   `{"body":"` + body + `"`,
			want: []string{
				"the job definition is {size} bytes; the limit is 16384 bytes (16 KB)",
				"invalid JSON at byte {size}: unexpected end of JSON input",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errs := DecodeJob([]byte(tt.in))
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = strings.ReplaceAll(w, "{size}", fmt.Sprint(len(tt.in)))
			}
			assertErrorList(t, errs, want)
		})
	}

	t.Run("a job of exactly the limit is accepted", func(t *testing.T) {
		t.Parallel()
		in := `{"action":{"request":{"body":"` + body + `"}}}`
		in = `{"action":{"request":{"body":"` + body[:MaxJobBytes-(len(in)-MaxJobBytes)] + `"}}}`
		if len(in) != MaxJobBytes {
			t.Fatalf("test input is %d bytes, want %d", len(in), MaxJobBytes)
		}
		if _, errs := DecodeJob([]byte(in)); len(errs) > 0 {
			t.Errorf("unexpected errors: %v", errs)
		}
	})
}

// assertErrorList checks that errs are exactly want, as "path: message", in
// order.
func assertErrorList(t *testing.T, errs FieldErrors, want []string) {
	t.Helper()
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
