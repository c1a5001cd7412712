package planner

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/jobscheduler/scheduler/contracts"
)

// example is one row of testdata/examples.json: a job, the time it is
// created, and the instants it must run at. The same table runs through
// `scheduler preview` in cmd/scheduler.
type example struct {
	Name   string          `json:"name"`
	Source string          `json:"source"`
	Now    time.Time       `json:"now"`
	Job    json.RawMessage `json:"job"`
	Want   []string        `json:"want"`
	// Count is how many instants to ask for; default len(Want), plus a few
	// more when the job ends, to show that it does.
	Count int `json:"count"`
}

func loadExamples(t testing.TB) []example {
	t.Helper()
	data, err := os.ReadFile("testdata/examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []example
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// ends reports whether the example's job stops by itself, so that its list
// of instants is complete.
func (e example) ends(t testing.TB) bool {
	job, errs := contracts.DecodeJob(e.Job)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	r := job.Properties.Recurrence
	return r == nil || r.Count != nil || r.EndTime != nil
}

func (e example) ask(t testing.TB) int {
	if e.Count > 0 {
		return e.Count
	}
	if e.ends(t) {
		return len(e.Want) + 3
	}
	return len(e.Want)
}

func formatAll(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return out
}

func TestExamples(t *testing.T) {
	t.Parallel()
	for _, ex := range loadExamples(t) {
		t.Run(ex.Source+"/"+ex.Name, func(t *testing.T) {
			t.Parallel()
			got, err := Preview(ex.Job, ex.Now, ex.ask(t))
			if err != nil {
				t.Fatalf("invalid: %v", err)
			}
			if !slices.Equal(formatAll(got), ex.Want) {
				t.Fatalf("instants\n got %q\nwant %q", formatAll(got), ex.Want)
			}
		})
	}
}

// Next from any instant must agree with the sequence: from each occurrence
// it gives the following one, and from just before an occurrence it gives
// that occurrence.
func TestNextAgreesWithTheSequence(t *testing.T) {
	t.Parallel()
	for _, ex := range loadExamples(t) {
		t.Run(ex.Name, func(t *testing.T) {
			t.Parallel()
			s := mustSchedule(t, ex.Job, ex.Now)
			seq := s.Upcoming(len(ex.Want))
			for i := 1; i < len(seq); i++ {
				if next, ok := s.Next(seq[i-1]); !ok || !next.Equal(seq[i]) {
					t.Fatalf("Next(%s) = %s, %v; want %s", seq[i-1], next, ok, seq[i])
				}
				if next, ok := s.Next(seq[i].Add(-time.Second)); !ok || !next.Equal(seq[i]) {
					t.Fatalf("Next(%s - 1s) = %s, %v; want %s", seq[i], next, ok, seq[i])
				}
			}
		})
	}
}

func mustSchedule(t testing.TB, job []byte, now time.Time) *Schedule {
	t.Helper()
	p, errs := ParseJob(job, now)
	if len(errs) > 0 {
		t.Fatalf("invalid job: %v", errs)
	}
	s, err := NewSchedule(&p, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Schedule fits in the allocator's 256-byte size class: the planner keeps
// one per job, and at 288 bytes (its size before its small fields were
// gathered) a million jobs held 32 MB more.
func TestScheduleSize(t *testing.T) {
	t.Parallel()
	if size := unsafe.Sizeof(Schedule{}); size > 256 {
		t.Errorf("a Schedule takes %d bytes, more than 256", size)
	}
}
