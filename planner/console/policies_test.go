package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// officeJob runs every day at 09:00 UTC from 2030-12-23, within a 30
// minute window, except on the days calendar holidays holds; how it does
// so on those days is onExcludedDay.
func officeJob(onExcludedDay string) string {
	return `{"properties": {"startTime": "2030-12-23T09:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com/office", "method": "GET"}},
		"catchUp": "Latest", "overlap": "Skip", "pauseAfterFaults": 3,
		"recurrence": {"frequency": "Day", "flexibleWindow": "PT30M", "excludedCalendars": ["holidays"], "onExcludedDay": "` + onExcludedDay + `"}}}`
}

// The job page and the editor's check show what each scheduling policy
// does to the next runs, and the job's run policies in its summary.
func TestTheNextRunsShowThePolicies(t *testing.T) {
	t.Parallel()
	base, _ := startPlanner(t)
	auth := []string{"Authorization", "Bearer " + operatorToken, "Content-Type", "application/json"}
	calendar := `{"properties": {"dates": [{"date": "2030-12-25", "name": "Christmas Day"}]}}`
	if code, body := testkit.Call(t, "PUT", base+collection+"/calendars/holidays?api-version=2016-03-01", calendar, auth...); code/100 != 2 {
		t.Fatalf("creating the calendar: %d %s", code, body)
	}
	for job, action := range map[string]string{"office": "Skip", "moved": "NextBusinessDay"} {
		if code, body := testkit.Call(t, "PUT", base+collection+"/jobs/"+job+"?api-version=2016-03-01", officeJob(action), auth...); code != http.StatusCreated {
			t.Fatalf("creating job %s: %d %s", job, code, body)
		}
	}
	b := newBrowser(t, base)
	b.signIn(operatorToken)
	window := regexp.MustCompile(`runs at \d\d:\d\d:\d\d, &#43;(\d+m)?(\d+s)? in its 30m window`)

	t.Run("a skipped occurrence is greyed and says which holiday of which calendar skips it", func(t *testing.T) {
		res, page := b.do("GET", "/c/s/rg/c/jobs/office", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET the job page: %d", res.StatusCode)
		}
		skipped := regexp.MustCompile(`<tr class="skipped"><td>–</td><td><time datetime="2030-12-25T09:00:00Z">[^<]*</time></td><td>skipped: Christmas Day \(holidays\)</td></tr>`)
		if !skipped.MatchString(page) {
			t.Errorf("the job page does not mark 2030-12-25 skipped:\n%s", page)
		}
		if n := len(window.FindAllString(page, -1)); n != 10 {
			t.Errorf("the job page shows %d runs within their window, want 10:\n%s", n, page)
		}
		for _, policy := range []string{"Catch-up Latest", "Overlap Skip", "disabled after 3 consecutive faulted occurrences"} {
			if !strings.Contains(page, policy) {
				t.Errorf("the job's summary does not show %q", policy)
			}
		}
	})

	t.Run("a moved occurrence says the date it was moved from", func(t *testing.T) {
		_, page := b.do("GET", "/c/s/rg/c/jobs/moved", nil)
		moved := regexp.MustCompile(`<time datetime="2030-12-26T09:00:00Z">[^<]*</time></td><td>moved from 2030-12-25 09:00:00 UTC: Christmas Day \(holidays\); runs at`)
		if !moved.MatchString(page) {
			t.Errorf("the job page does not mark 2030-12-26 moved from 2030-12-25:\n%s", page)
		}
	})

	t.Run("the editor's check marks the draft's next runs the same way", func(t *testing.T) {
		_, page := b.do("GET", "/c/s/rg/c/jobs/office/edit", nil)
		res, page := b.do("POST", "/c/s/rg/c/check", url.Values{"csrf": {b.csrf(page)}, "job": {"draft"}, "new": {"true"}, "body": {officeJob("Skip")}})
		if res.StatusCode != http.StatusOK {
			t.Fatalf("check: %d\n%s", res.StatusCode, page)
		}
		if !regexp.MustCompile(`<li class="skipped"><time datetime="2030-12-25T09:00:00Z">[^<]*</time> · <span class="mark">skipped: Christmas Day \(holidays\)</span></li>`).MatchString(page) {
			t.Errorf("the check does not mark 2030-12-25 skipped:\n%s", page)
		}
		if !window.MatchString(page) {
			t.Errorf("the check does not show the run times in the window:\n%s", page)
		}
	})
}
