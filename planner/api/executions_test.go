package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// readExecutions decodes an answer of GET …/executionCounts.
func readExecutions(t *testing.T, r response) ExecutionCountsResult {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out ExecutionCountsResult
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// executionLines writes counts as "HH:MM +succeeded -failed" for
// comparison.
func executionLines(counts []MinuteExecutions) []string {
	out := make([]string, len(counts))
	for i, c := range counts {
		out[i] = c.Minute.UTC().Format("15:04") + " +" + strconv.FormatInt(c.Succeeded, 10) + " -" + strconv.FormatInt(c.Failed, 10)
	}
	return out
}

const (
	subExecutions = "/subscriptions/sub1/providers/Microsoft.Scheduler/executionCounts"
	rgExecutions  = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/executionCounts"
)

func TestExecutionCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The API's now is 2016-03-30T20:00:00Z: the window of 60 minutes is
	// [19:01, 20:01).
	at := func(hhmm string) time.Time {
		m, err := time.Parse(time.RFC3339, "2016-03-30T"+hhmm+":00Z")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []string{base + "/c1", base + "/c2", base + "/quiet", "/subscriptions/sub1/resourceGroups/rg2/providers/Microsoft.Scheduler/jobCollections/c3"} {
		b.mustDo(t, http.StatusCreated, "PUT", c, collectionBody)
	}
	ref := func(rg, c string) contracts.CollectionRef {
		return contracts.CollectionRef{Subscription: "sub1", ResourceGroup: rg, Collection: c}
	}
	b.sched.countExecutions(ref("rg1", "c1"),
		MinuteExecutions{Minute: at("19:00"), Succeeded: 100}, // before the window
		MinuteExecutions{Minute: at("19:01"), Succeeded: 3, Failed: 1},
		MinuteExecutions{Minute: at("20:00"), Succeeded: 2})
	b.sched.countExecutions(ref("rg1", "c2"), MinuteExecutions{Minute: at("19:01"), Failed: 2})
	b.sched.countExecutions(ref("rg2", "c3"), MinuteExecutions{Minute: at("19:30"), Succeeded: 5})
	b.sched.countExecutions(ref("rg1", "deleted"), MinuteExecutions{Minute: at("19:30"), Succeeded: 7})

	for _, tt := range []struct {
		name, path string
		want       []string
	}{
		{"the subscription counts every collection in it", subExecutions, []string{"19:01 +3 -3", "19:30 +5 -0", "20:00 +2 -0"}},
		{"the resource group counts its collections", rgExecutions, []string{"19:01 +3 -3", "20:00 +2 -0"}},
		{"a collection counts its own", base + "/c1/executionCounts", []string{"19:01 +3 -1", "20:00 +2 -0"}},
		{"a window of 30 minutes", base + "/c1/executionCounts?minutes=30", []string{"20:00 +2 -0"}},
		{"a window of a day", base + "/c1/executionCounts?minutes=1440", []string{"19:00 +100 -0", "19:01 +3 -1", "20:00 +2 -0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := readExecutions(t, b.do(t, "GET", tt.path, ""))
			if lines := executionLines(got.PerMinute); !slices.Equal(lines, tt.want) {
				t.Errorf("counts %v, want %v", lines, tt.want)
			}
		})
	}

	t.Run("the window ends with the current minute", func(t *testing.T) {
		got := readExecutions(t, b.do(t, "GET", subExecutions, ""))
		if !got.From.Equal(at("19:01")) || !got.To.Equal(at("20:01")) {
			t.Errorf("window [%v, %v), want [19:01, 20:01)", got.From, got.To)
		}
	})

	t.Run("a collection without executions answers an empty list", func(t *testing.T) {
		r := b.do(t, "GET", base+"/quiet/executionCounts", "")
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"perMinute":[]`) {
			t.Errorf("%d %s, want an empty perMinute", r.status, r.body)
		}
		r = b.do(t, "GET", "/subscriptions/nobody/providers/Microsoft.Scheduler/executionCounts", "")
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"perMinute":[]`) {
			t.Errorf("a subscription without collections: %d %s, want an empty perMinute", r.status, r.body)
		}
	})

	t.Run("minutes must be from 1 to 1440", func(t *testing.T) {
		for _, v := range []string{"0", "1441", "-5", "sixty", "1.5"} {
			r := b.do(t, "GET", rgExecutions+"?minutes="+v, "")
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidQuery || !strings.Contains(string(r.body), "minutes") {
				t.Errorf("minutes=%s: %d %s, want 400 %s naming minutes", v, r.status, r.body, codeInvalidQuery)
			}
		}
	})

	t.Run("a collection that does not exist is not found", func(t *testing.T) {
		if r := b.do(t, "GET", base+"/nope/executionCounts", ""); r.status != http.StatusNotFound {
			t.Errorf("%d %s, want 404", r.status, r.body)
		}
	})

	t.Run("only GET is allowed", func(t *testing.T) {
		if r := b.do(t, "POST", rgExecutions, ""); r.status != http.StatusMethodNotAllowed {
			t.Errorf("%d %s, want 405", r.status, r.body)
		}
	})
}

func TestExecutionCountsScopes(t *testing.T) {
	t.Parallel()
	readerC1 := fileToken{"reader-c1", "reader", []string{"/subscriptions/subA/resourceGroups/rg/jobCollections/c1"}}
	readerB := fileToken{"reader-b", "reader", []string{"/subscriptions/subB"}}
	b := setupAccess(t, Config{}, operator, readerA, readerC1, readerB)
	const rg = "/subscriptions/subA/resourceGroups/rg/providers/Microsoft.Scheduler"
	minute := b.now.Truncate(time.Minute)
	for i, c := range []string{"c1", "c2"} {
		b.mustAs(t, operator, http.StatusCreated, "PUT", rg+"/jobCollections/"+c, collectionBody)
		b.sched.countExecutions(contracts.CollectionRef{Subscription: "subA", ResourceGroup: "rg", Collection: c},
			MinuteExecutions{Minute: minute, Succeeded: int64(10 * (i + 1)), Failed: int64(i + 1)})
	}
	for _, tt := range []struct {
		name  string
		token fileToken
		path  string
		want  []string
	}{
		{"a reader of the subscription counts every collection", readerA, "/subscriptions/subA/providers/Microsoft.Scheduler/executionCounts", []string{"20:00 +30 -3"}},
		{"a reader of one collection counts only it in the subscription", readerC1, "/subscriptions/subA/providers/Microsoft.Scheduler/executionCounts", []string{"20:00 +10 -1"}},
		{"a reader of one collection counts only it in the resource group", readerC1, rg + "/executionCounts", []string{"20:00 +10 -1"}},
		{"a reader of one collection counts it", readerC1, rg + "/jobCollections/c1/executionCounts", []string{"20:00 +10 -1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := readExecutions(t, b.mustAs(t, tt.token, http.StatusOK, "GET", tt.path, ""))
			if lines := executionLines(got.PerMinute); !slices.Equal(lines, tt.want) {
				t.Errorf("counts %v, want %v", lines, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		token fileToken
		path  string
	}{
		{"another collection is forbidden", readerC1, rg + "/jobCollections/c2/executionCounts"},
		{"another subscription is forbidden", readerB, "/subscriptions/subA/providers/Microsoft.Scheduler/executionCounts"},
		{"another subscription's resource group is forbidden", readerB, rg + "/executionCounts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := b.as(t, tt.token, "GET", tt.path, ""); r.status != http.StatusForbidden || r.errorCode(t) != codeAuthorizationFailed {
				t.Errorf("%d %s, want 403", r.status, r.body)
			}
		})
	}
}
