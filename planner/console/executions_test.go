package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/service"
)

// The overview charts the attempts that ended in the last hour, succeeded
// and failed, across the collections the viewer may read: a reader of
// subscription s sees the attempts of s's collection alone, the operator
// those of every subscription.
func TestTheOverviewChartsTheLastHoursExecutions(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	file := fmt.Sprintf("tokens:\n  - {name: ops, sha256: %s, role: operator, scopes: ['*']}\n  - {name: viewer, sha256: %s, role: reader, scopes: [/subscriptions/s]}\n",
		api.HashToken(operatorToken), api.HashToken(readerToken))
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	_, prefix, mr := testkit.Redis(t)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	svc, err := service.Start(context.Background(), service.Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32),
		TokensFile: tokens, Logger: (&testkit.Logs{}).Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	base := svc.URL()
	auth := []string{"Authorization", "Bearer " + operatorToken, "Content-Type", "application/json"}
	job := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com/ping", "method": "GET"}},
		"recurrence": {"frequency": "Day"}}}`
	mine := contracts.CollectionRef{Subscription: "s", ResourceGroup: "rg", Collection: "c"}
	theirs := contracts.CollectionRef{Subscription: "t", ResourceGroup: "rg", Collection: "other"}
	for _, c := range []contracts.CollectionRef{mine, theirs} {
		path := "/subscriptions/" + c.Subscription + "/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/" + c.Collection
		if code, body := testkit.Call(t, "PUT", base+path+"?api-version=2016-03-01", `{"properties": {"sku": {"name": "Standard"}}}`, auth...); code != http.StatusCreated {
			t.Fatalf("creating %s: %d %s", c.Collection, code, body)
		}
		if code, body := testkit.Call(t, "PUT", base+path+"/jobs/ping?api-version=2016-03-01", job, auth...); code != http.StatusCreated {
			t.Fatalf("creating the job of %s: %d %s", c.Collection, code, body)
		}
	}

	// Results as workers publish them: in s, two attempts succeeded and
	// one failed; in t, five failed.
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now().UTC().Add(-3 * time.Minute)
	publish := func(c contracts.CollectionRef, n int, outcome contracts.Outcome) {
		ref := c.Job("ping")
		at := ended.Add(time.Duration(n) * time.Second)
		r := contracts.Result{Version: contracts.MessageVersion, Job: ref, ActionName: contracts.MainAction,
			OccurrenceID: contracts.OccurrenceID(ref, at, contracts.MainAction, 0), OccurrenceKey: contracts.OccurrenceKey(ref, at, contracts.MainAction, 0),
			Occurrence: int64(n + 1), ExpectedTime: at, ActionType: contracts.ActionHTTP, StartTime: at, EndTime: at,
			Outcome: outcome, LastAttempt: true}
		data, err := json.Marshal(r.Event())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(t.Context(), contracts.ResultSubjectPrefix+ref.Tokens(), data); err != nil {
			t.Fatal(err)
		}
	}
	publish(mine, 0, contracts.Succeeded)
	publish(mine, 1, contracts.Succeeded)
	publish(mine, 2, contracts.Failed)
	for n := range 5 {
		publish(theirs, n, contracts.Failed)
	}
	counted := func(sub string, want int64) bool {
		code, body := testkit.Call(t, "GET", base+"/subscriptions/"+sub+"/providers/Microsoft.Scheduler/executionCounts?api-version=2016-03-01", "", auth...)
		var out api.ExecutionCountsResult
		if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
			return false
		}
		var n int64
		for _, m := range out.PerMinute {
			n += m.Succeeded + m.Failed
		}
		return n == want
	}
	testkit.Eventually(t, 20*time.Second, func() bool { return counted("s", 3) && counted("t", 5) }, "the planner did not count the results")

	for _, tt := range []struct {
		name, token, want string
	}{
		{"a reader of s sees its collection's", readerToken, "2 succeeded, 1 failed in the last 60 minutes"},
		{"the operator sees every subscription's", operatorToken, "2 succeeded, 6 failed in the last 60 minutes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrowser(t, base)
			b.signIn(tt.token)
			res, page := b.do("GET", "/", nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET /: %d", res.StatusCode)
			}
			for _, want := range []string{`<h2 id="h-executions">Executions in the last hour</h2>`, `aria-labelledby="executions-title"`,
				`class="bar bad-bar"`, `class="bar ok-bar"`, tt.want} {
				if !strings.Contains(page, want) {
					t.Errorf("the overview does not show %q", want)
				}
			}
			if t.Failed() {
				start := strings.Index(page, `id="h-executions"`)
				t.Logf("the section:\n%s", page[max(start, 0):min(len(page), max(start, 0)+3000)])
			}
		})
	}
}
