package contracts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

var testJob = JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "coll", Job: "job"}

func TestOccurrenceKeyAndID(t *testing.T) {
	t.Parallel()

	due := time.Date(2026, 1, 2, 6, 15, 0, 900_000_000, time.FixedZone("", 3600))
	tests := []struct {
		name    string
		job     JobRef
		due     time.Time
		action  ActionName
		attempt int
		wantKey string
	}{
		{"the key is readable with the due time in UTC to the second", testJob, due.Truncate(time.Second), MainAction, 0, "sub/rg/coll/job/20260102T051500Z/MainAction/0"},
		{"the error action and attempt are part of the key", testJob, due.Truncate(time.Second), ErrorAction, 3, "sub/rg/coll/job/20260102T051500Z/ErrorAction/3"},
		{"a due time within a second (a run now) is written to the millisecond", testJob, due.Add(123_456), MainAction, 0, "sub/rg/coll/job/20260102T051500.900Z/MainAction/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := OccurrenceKey(tt.job, tt.due, tt.action, tt.attempt)
			if key != tt.wantKey {
				t.Errorf("OccurrenceKey = %q, want %q", key, tt.wantKey)
			}
			sum := sha256.Sum256([]byte(tt.wantKey))
			if id, want := OccurrenceID(tt.job, tt.due, tt.action, tt.attempt), hex.EncodeToString(sum[:])[:32]; id != want {
				t.Errorf("OccurrenceID = %q, want %q", id, want)
			}
		})
	}

	t.Run("ids differ by attempt and action and agree for equal instants", func(t *testing.T) {
		t.Parallel()
		a := OccurrenceID(testJob, due, MainAction, 0)
		if a == OccurrenceID(testJob, due, MainAction, 1) || a == OccurrenceID(testJob, due, ErrorAction, 0) {
			t.Error("OccurrenceID does not tell attempts or actions apart")
		}
		if a != OccurrenceID(testJob, due.UTC(), MainAction, 0) {
			t.Error("OccurrenceID differs for the same instant in another zone")
		}
		if a == OccurrenceID(testJob, due.Add(time.Millisecond), MainAction, 0) {
			t.Error("two runs now a millisecond apart share an id")
		}
	})
}

func TestHistoryID(t *testing.T) {
	t.Parallel()

	recorded := time.Date(2016, 3, 30, 20, 39, 53, 802195100, time.UTC)
	tests := []struct {
		name  string
		start time.Time
		seq   uint64
		want  string
	}{
		{"the recorded entry's id is reproduced", recorded, math.MaxInt64 - 9223372036854580813, "02519429304061978048:09223372036854580813"},
		{"the zone of the start does not matter", recorded.In(time.FixedZone("", -8*3600)), 0, "02519429304061978048:09223372036854775807"},
		{"the latest start gives the smallest first part", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), 1, "00000000000000000000:09223372036854775806"},
		{"a start after year 9999 is clamped", time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), 1, "00000000000009999999:09223372036854775806"},
		{"the earliest start gives the largest first part", time.Time{}, 0, "03155378975999999999:09223372036854775807"},
		{"a start before year 1 is clamped", time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), 0, "03155378975999999999:09223372036854775807"},
		{"a sequence beyond int64 gives zero", recorded, math.MaxUint64, "02519429304061978048:00000000000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := HistoryID(tt.start, tt.seq); got != tt.want {
				t.Errorf("HistoryID = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("newer starts and later sequences sort first", func(t *testing.T) {
		t.Parallel()
		older, newer := HistoryID(recorded, 5), HistoryID(recorded.Add(100*time.Nanosecond), 1)
		if newer >= older {
			t.Errorf("newer %q does not sort before older %q", newer, older)
		}
		if later := HistoryID(recorded, 6); later >= older {
			t.Errorf("later sequence %q does not sort before %q", later, older)
		}
	})
}

func TestMillis(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   Millis
		want time.Duration
	}{
		{"milliseconds convert to a duration", MillisOf(1500 * time.Millisecond), 1500 * time.Millisecond},
		{"sub-millisecond parts are truncated", MillisOf(time.Millisecond + time.Microsecond), time.Millisecond},
		{"a huge value saturates", Millis(math.MaxInt64), time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
		{"a huge negative value saturates", Millis(math.MinInt64), -time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.in.Duration(); got != tt.want {
				t.Errorf("Duration() = %v, want %v", got, tt.want)
			}
		})
	}
}

func validExecution() Execution {
	due := time.Date(2026, 1, 2, 5, 15, 0, 0, time.UTC)
	return Execution{
		Version:       MessageVersion,
		OccurrenceID:  OccurrenceID(testJob, due, MainAction, 0),
		OccurrenceKey: OccurrenceKey(testJob, due, MainAction, 0),
		Job:           testJob,
		ActionName:    MainAction,
		Occurrence:    1,
		ExpectedTime:  due,
		DispatchedAt:  due.Add(time.Second),
		Action:        json.RawMessage(`{"type":"Http"}`),
		Timeout:       MillisOf(time.Minute),
	}
}

func validResult() Result {
	e := validExecution()
	return Result{
		Version: MessageVersion, OccurrenceID: e.OccurrenceID, OccurrenceKey: e.OccurrenceKey, Job: e.Job,
		ActionName: MainAction, ActionType: ActionHTTP, Occurrence: 7, Attempt: 2,
		ExpectedTime: e.ExpectedTime, StartTime: e.ExpectedTime.Add(time.Second), EndTime: e.ExpectedTime.Add(2 * time.Second),
		Outcome: Succeeded, StatusCode: 200, Message: "Http Action - Response from host 'x': 'OK'",
	}
}

func TestMessagesJSON(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		msg      any
		wantKeys []string
	}{
		{"an execution has its wire names", validExecution(), []string{`"v":1`, `"occurrenceId":`, `"job":{"subscription":"sub","resourceGroup":"rg","collection":"coll","job":"job"}`, `"timeoutMs":60000`, `"action":{"type":"Http"}`}},
		{"a result has its wire names", validResult(), []string{`"v":1`, `"outcome":"Succeeded"`, `"statusCode":200`, `"actionType":"Http"`}},
		{"a history entry has its wire names", validResult().HistoryEntry(), []string{`"v":1`, `"status":"Completed"`, `"retryCount":2`, `"repeatCount":7`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := json.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.wantKeys {
				if !strings.Contains(string(out), k) {
					t.Errorf("%s does not contain %s", out, k)
				}
			}
			back := reflect.New(reflect.TypeOf(tt.msg))
			if err := json.Unmarshal(out, back.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), tt.msg) {
				t.Errorf("round trip gave %+v, want %+v", back.Elem().Interface(), tt.msg)
			}
		})
	}
}

func TestMessageValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		err     error
		wantErr string
	}{
		{"a valid execution passes", validExecution().Validate(), ""},
		{"a valid result passes", validResult().Validate(), ""},
		{"an execution of another version is rejected", func() error { e := validExecution(); e.Version = 2; return e.Validate() }(), "version 2 is not the supported version 1"},
		{"an execution with a bad id and job is rejected", func() error {
			e := validExecution()
			e.OccurrenceID, e.Job.Job = "xyz", "a/b"
			return e.Validate()
		}(), `occurrenceId "xyz" is not 32 hex digits; job name "a/b" is not valid`},
		{"an execution without action or timeout is rejected", func() error {
			e := validExecution()
			e.Action, e.Timeout, e.Occurrence = nil, 0, -1
			return e.Validate()
		}(), "occurrence must not be negative; action is missing; timeoutMs must be positive"},
		{"a result with an unknown outcome is rejected", func() error { r := validResult(); r.Outcome = "Maybe"; return r.Validate() }(), `outcome "Maybe" is not Succeeded or Failed`},
		{"a result that ends before it starts is rejected", func() error {
			r := validResult()
			r.EndTime = r.StartTime.Add(-time.Second)
			return r.Validate()
		}(), "startTime is missing or after endTime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.wantErr == "" {
				if tt.err != nil {
					t.Fatalf("unexpected error: %v", tt.err)
				}
				return
			}
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.wantErr) || !errors.Is(tt.err, ErrInvalidMessage) {
				t.Errorf("error = %v, want ErrInvalidMessage containing %q", tt.err, tt.wantErr)
			}
		})
	}
}

func TestHistoryEntryProperties(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		outcome    Outcome
		wantStatus ExecutionStatus
	}{
		{"a completed attempt shows no status, as the original service did", Succeeded, ""},
		{"a failed attempt shows Failed", Failed, StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validResult()
			r.Outcome = tt.outcome
			h := r.HistoryEntry()
			p := h.Properties()
			if p.Status != tt.wantStatus || p.RetryCount != 2 || p.RepeatCount != 7 || !p.StartTime.Equal(r.StartTime) ||
				!p.ExpectedExecutionTime.Equal(r.ExpectedTime) || p.ActionName != MainAction || p.Message != r.Message {
				t.Errorf("Properties() = %+v", p)
			}
		})
	}
}
