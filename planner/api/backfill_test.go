package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// backfilledJob runs daily from 2016-03-01; the bundle's now is 2016-03-30.
const backfilledJob = `{"properties": {"startTime": "2016-03-01T00:00:00Z",
	"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}}, "recurrence": {"frequency": "Day"}}}`

// oneTimeJob has no recurrence.
const oneTimeJob = `{"properties": {"startTime": "2016-04-01T00:00:00Z",
	"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}}}}`

func TestBackfill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/daily", backfilledJob)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/once", oneTimeJob)
	path := base + "/jc/jobs/daily/backfill"

	t.Run("a valid range is accepted with its count, first and last instants and duration", func(t *testing.T) {
		r := b.mustDo(t, http.StatusAccepted, "POST", path, `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`).json(t)
		want := map[string]any{"count": 3.0, "first": "2016-03-02T00:00:00Z", "last": "2016-03-04T00:00:00Z", "pace": "PT1S", "duration": "PT2S"}
		if fmt.Sprint(r) != fmt.Sprint(want) {
			t.Fatalf("answer %v, want %v", r, want)
		}
		calls := b.sched.backfills
		if len(calls) != 1 || calls[0].job.Job != "daily" || !calls[0].start.Equal(time.Date(2016, 3, 2, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("backfills scheduled: %+v", calls)
		}
	})
	for _, tt := range []struct {
		name, job, body string
		status          int
		// says is in the message.
		says string
	}{
		{"a body that is not JSON", "daily", `start=yesterday`, 400, `the body must be a JSON object {"start": "<date-time>", "end": "<date-time>"}`},
		{"no start", "daily", `{"end": "2016-03-04T00:00:00Z"}`, 400, "The backfill request is invalid: start: is required: an ISO 8601 date-time"},
		{"no end", "daily", `{"start": "2016-03-04T00:00:00Z"}`, 400, "end: is required"},
		{"a start that is no date-time", "daily", `{"start": "March 2", "end": "2016-03-04T00:00:00Z"}`, 400, `start: "March 2" is not an ISO 8601 date-time`},
		{"an end before the start", "daily", `{"start": "2016-03-04T00:00:00Z", "end": "2016-03-02T00:00:00Z"}`, 400,
			"end: 2016-03-02T00:00:00Z is not after start 2016-03-04T00:00:00Z"},
		{"an end equal to the start", "daily", `{"start": "2016-03-04T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`, 400, "is not after start"},
		{"an end after now", "daily", `{"start": "2016-03-04T00:00:00Z", "end": "2016-04-01T00:00:00Z"}`, 400,
			"end: 2016-04-01T00:00:00Z is after now (2016-03-30T20:00:00Z): a backfill runs past instants only"},
		{"a job without a recurrence", "once", `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`, 400,
			`job "once" in job collection "jc" has no recurrence: only a recurring job can be backfilled`},
		{"a job that does not exist", "none", `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`, 404, "was not found"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			before := len(b.sched.backfills)
			r := b.mustDo(t, tt.status, "POST", base+"/jc/jobs/"+tt.job+"/backfill", tt.body)
			if msg := message(r); !strings.Contains(msg, tt.says) {
				t.Errorf("message %q does not say %q", msg, tt.says)
			}
			if len(b.sched.backfills) != before {
				t.Error("a refused backfill was scheduled")
			}
		})
	}
	t.Run("a range of too many occurrences is refused naming the count and the limit", func(t *testing.T) {
		b.sched.mu.Lock()
		b.sched.backfillErr = &BackfillTooLargeError{Count: 43200}
		b.sched.mu.Unlock()
		r := b.mustDo(t, http.StatusBadRequest, "POST", path, `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`)
		if msg, want := message(r), "the range holds 43200 occurrences of the job's schedule, above the limit of 10000 for one backfill; backfill a shorter range"; msg != want {
			t.Errorf("message %q, want %q", msg, want)
		}
	})
	t.Run("a second backfill while one is pending is refused", func(t *testing.T) {
		b.sched.mu.Lock()
		b.sched.backfillErr = ErrBackfillPending
		b.sched.mu.Unlock()
		r := b.mustDo(t, http.StatusConflict, "POST", path, `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`)
		if msg := message(r); !strings.Contains(msg, `a backfill of job "daily" in job collection "jc" is pending`) {
			t.Errorf("message %q", msg)
		}
	})
}

// Whoever may run a job may backfill it: a writer, not a reader.
func TestAWriterMayBackfillAJobAndAReaderMayNot(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, writerA, readerA)
	coll := collections("subA", "rg") + "/c1"
	b.mustAs(t, writerA, http.StatusCreated, "PUT", coll, `{"properties": {}}`)
	b.mustAs(t, writerA, http.StatusCreated, "PUT", coll+"/jobs/j", backfilledJob)
	body := `{"start": "2016-03-02T00:00:00Z", "end": "2016-03-04T00:00:00Z"}`
	b.mustAs(t, readerA, http.StatusForbidden, "POST", coll+"/jobs/j/backfill", body)
	b.mustAs(t, writerA, http.StatusAccepted, "POST", coll+"/jobs/j/backfill", body)
	if !b.logs.Contains(`msg="job backfill requested"`, "principal=token:writer-a", "runs=3") {
		t.Errorf("no audit line for the backfill:\n%s", b.logs.String())
	}
}

func TestISODuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "PT0S", time.Second: "PT1S", 500 * time.Millisecond: "PT0.5S", 9999 * time.Second: "PT2H46M39S", time.Hour: "PT1H", 61 * time.Minute: "PT1H1M",
	} {
		if got := isoDuration(d); got != want {
			t.Errorf("isoDuration(%s) = %s, want %s", d, got, want)
		}
	}
}

// message returns the message of an ARM error body.
func message(r response) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &body)
	return body.Error.Message
}
