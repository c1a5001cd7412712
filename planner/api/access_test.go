package api

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Flat tokens of the tests, long enough to be accepted.
var (
	token1 = "token-1-" + strings.Repeat("a", MinTokenLength)
	token2 = "token-2-" + strings.Repeat("b", MinTokenLength)
)

// fileToken is a token and its entry in a token file.
type fileToken struct {
	name, role string
	scopes     []string
}

// token returns the token of the entry: its name made long enough.
func (f fileToken) token() string { return f.name + "-" + strings.Repeat("t", MinTokenLength) }

// tokenFileText is a token file holding the entries.
func tokenFileText(tokens ...fileToken) string {
	var b strings.Builder
	b.WriteString("tokens:\n")
	for _, f := range tokens {
		fmt.Fprintf(&b, "  - name: %s\n    sha256: %s\n    role: %s\n    scopes:\n", f.name, HashToken(f.token()), f.role)
		for _, s := range f.scopes {
			fmt.Fprintf(&b, "      - %q\n", s)
		}
	}
	return b.String()
}

// The principals of the access tests.
var (
	operator   = fileToken{"ops", "operator", []string{"*"}}
	readerA    = fileToken{"reader-a", "reader", []string{"/subscriptions/subA"}}
	writerA    = fileToken{"writer-a", "writer", []string{"/subscriptions/subA"}}
	writerColl = fileToken{"writer-c1", "writer", []string{"/subscriptions/subA/resourceGroups/rg/jobCollections/c1"}}
)

// accessBundle is an API authenticating the tokens of a token file.
type accessBundle struct {
	*bundle
	file *TokenFile
	path string
	logs *testkit.Logs
}

// setupAccess serves the API with a token file of the tokens, reread every
// 10 ms, and cfg.
func setupAccess(t *testing.T, cfg Config, tokens ...fileToken) *accessBundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(path, []byte(tokenFileText(tokens...)), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Logs{}
	file, err := OpenTokenFile(TokenFileConfig{Path: path, Interval: 10 * time.Millisecond, Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Authenticators = append(cfg.Authenticators, file)
	cfg.Logger = logs.Logger()
	return &accessBundle{bundle: setupWith(t, testkit.NATS(t), cfg), file: file, path: path, logs: logs}
}

// as makes a request with the token of f.
func (b *accessBundle) as(t *testing.T, f fileToken, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, "Authorization", "Bearer "+f.token())
}

// mustAs makes a request with the token of f and checks its status.
func (b *accessBundle) mustAs(t *testing.T, f fileToken, want int, method, path, body string) response {
	t.Helper()
	r := b.as(t, f, method, path, body)
	if r.status != want {
		t.Fatalf("%s %s as %s: status %d, want %d\n%s", method, path, f.name, r.status, want, r.body)
	}
	return r
}

func collections(sub, rg string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Scheduler/jobCollections"
}

const dailyJob = `{"properties": {"startTime": "2030-01-01T00:00:00Z",
	"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}}, "recurrence": {"frequency": "Day"}}}`

func TestScopes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want Scope
	}{
		{"*", Scope{}},
		{"/subscriptions/s1", Scope{Subscription: "s1"}},
		{"/subscriptions/s1/resourceGroups/rg.1", Scope{Subscription: "s1", ResourceGroup: "rg.1"}},
		{"/SUBSCRIPTIONS/s1/resourcegroups/rg/jobCollections/c", Scope{"s1", "rg", "c"}},
		{"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c", Scope{"s1", "rg", "c"}},
		{"/subscriptions/s1/resourceGroups/*/jobCollections/c", Scope{Subscription: "s1", Collection: "c"}},
		{"/subscriptions/*", Scope{}},
	} {
		got, err := ParseScope(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if again, err := ParseScope(got.String()); err != nil || again != got {
			t.Errorf("ParseScope(%q.String() = %q) = %+v, %v", tt.in, got.String(), again, err)
		}
	}
	for in, says := range map[string]string{
		"":                                   "is not valid",
		"subscriptions/s1":                   "is not valid",
		"/subscriptions":                     "is not valid",
		"/resourceGroups/rg":                 "must be subscriptions",
		"/subscriptions/s_1":                 "subscription id",
		"/subscriptions/s/resourceGroups/r.": "resource group name",
		"/subscriptions/s/resourceGroups/r/jobs/j": "must be jobCollections",
	} {
		if _, err := ParseScope(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParseScope(%q): %v, want an error saying %q", in, err, says)
		}
	}
	t.Run("grants read role:scope", func(t *testing.T) {
		g, err := ParseGrant("Writer:/subscriptions/s/resourceGroups/r")
		if err != nil || g != (Grant{RoleWriter, Scope{Subscription: "s", ResourceGroup: "r"}}) {
			t.Fatalf("%+v, %v", g, err)
		}
		for _, bad := range []string{"writer", "admin:*", "reader:/nowhere"} {
			if _, err := ParseGrant(bad); err == nil {
				t.Errorf("ParseGrant(%q) accepted", bad)
			}
		}
	})
}

func TestAReaderCannotChangeAnything(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, operator, readerA)
	coll := collections("subA", "rg") + "/c1"
	b.mustAs(t, operator, http.StatusCreated, "PUT", coll, `{"properties": {}}`)
	b.mustAs(t, operator, http.StatusCreated, "PUT", coll+"/jobs/j", dailyJob)

	for _, path := range []string{coll, coll + "/jobs", coll + "/jobs/j", coll + "/jobs/j/history", coll + "/jobs/j/preview", collections("subA", "rg")} {
		b.mustAs(t, readerA, http.StatusOK, "GET", path, "")
	}
	for _, req := range [][3]string{
		{"PUT", coll, `{"properties": {}}`},
		{"PATCH", coll, `{"tags": {"a": "b"}}`},
		{"DELETE", coll, ""},
		{"POST", coll + "/disable", ""},
		{"PUT", coll + "/jobs/j2", dailyJob},
		{"DELETE", coll + "/jobs/j", ""},
		{"POST", coll + "/jobs/j/run", ""},
		{"POST", coll + "/jobs/j/backfill", `{"start": "2016-03-01T00:00:00Z", "end": "2016-03-02T00:00:00Z"}`},
	} {
		r := b.mustAs(t, readerA, http.StatusForbidden, req[0], req[1], req[2])
		if code := r.errorCode(t); code != codeAuthorizationFailed {
			t.Fatalf("%s %s: code %q", req[0], req[1], code)
		}
		if !strings.Contains(string(r.body), "needs the role writer") {
			t.Fatalf("%s %s: %s", req[0], req[1], r.body)
		}
	}
	b.mustAs(t, operator, http.StatusOK, "GET", coll+"/jobs/j", "")
}

func TestAWriterSeesAndChangesOnlyItsScope(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, operator, writerA, writerColl)
	for _, c := range []string{collections("subA", "rg") + "/c1", collections("subA", "rg") + "/c2", collections("subA", "other") + "/c3", collections("subB", "rg") + "/c1"} {
		b.mustAs(t, operator, http.StatusCreated, "PUT", c, `{"properties": {}}`)
		b.mustAs(t, operator, http.StatusCreated, "PUT", c+"/jobs/j", dailyJob)
	}
	inB := collections("subB", "rg") + "/c1"

	t.Run("outside its subscription it gets 403, whether the resource exists or not", func(t *testing.T) {
		for _, req := range [][3]string{
			{"GET", inB, ""}, {"GET", inB + "/jobs/j", ""}, {"GET", inB + "/jobs", ""},
			{"GET", collections("subB", "rg"), ""}, {"GET", "/subscriptions/subB/providers/Microsoft.Scheduler/jobCollections", ""},
			{"PUT", inB + "/jobs/j", dailyJob}, {"PUT", collections("subB", "rg") + "/new", `{"properties": {}}`},
			{"GET", collections("subB", "rg") + "/missing", ""}, {"DELETE", inB, ""},
		} {
			if code := b.mustAs(t, writerA, http.StatusForbidden, req[0], req[1], req[2]).errorCode(t); code != codeAuthorizationFailed {
				t.Fatalf("%s %s: code %q", req[0], req[1], code)
			}
		}
		b.mustAs(t, operator, http.StatusOK, "GET", inB+"/jobs/j", "")
	})
	t.Run("within it, it reads and writes", func(t *testing.T) {
		b.mustAs(t, writerA, http.StatusCreated, "PUT", collections("subA", "rg")+"/c1/jobs/mine", dailyJob)
		b.mustAs(t, writerA, http.StatusOK, "PATCH", collections("subA", "rg")+"/c1/jobs/mine", `{"properties": {"state": "Disabled"}}`)
		b.mustAs(t, writerA, http.StatusCreated, "PUT", collections("subA", "new")+"/c9", `{"properties": {}}`)
		b.mustAs(t, writerA, http.StatusOK, "DELETE", collections("subA", "new")+"/c9", "")
	})
	names := func(r response) []string {
		var out []string
		for _, v := range r.json(t)["value"].([]any) {
			out = append(out, v.(map[string]any)["id"].(string))
		}
		return out
	}
	t.Run("listings show only what the token may read", func(t *testing.T) {
		all := names(b.mustAs(t, writerA, http.StatusOK, "GET", "/subscriptions/subA/providers/Microsoft.Scheduler/jobCollections", ""))
		if len(all) != 3 {
			t.Fatalf("subscription subA lists %v", all)
		}
		got := names(b.mustAs(t, writerColl, http.StatusOK, "GET", "/subscriptions/subA/providers/Microsoft.Scheduler/jobCollections", ""))
		if len(got) != 1 || got[0] != collections("subA", "rg")+"/c1" {
			t.Fatalf("a token scoped to c1 lists %v in its subscription", got)
		}
		got = names(b.mustAs(t, writerColl, http.StatusOK, "GET", collections("subA", "rg"), ""))
		if len(got) != 1 || got[0] != collections("subA", "rg")+"/c1" {
			t.Fatalf("a token scoped to c1 lists %v in its resource group", got)
		}
		jobs := names(b.mustAs(t, writerColl, http.StatusOK, "GET", collections("subA", "rg")+"/c1/jobs", ""))
		if len(jobs) != 2 {
			t.Fatalf("jobs of c1: %v", jobs)
		}
		b.mustAs(t, writerColl, http.StatusForbidden, "GET", collections("subA", "rg")+"/c2/jobs", "")
		b.mustAs(t, writerColl, http.StatusForbidden, "GET", collections("subA", "other"), "")
		b.mustAs(t, writerColl, http.StatusForbidden, "PUT", collections("subA", "rg")+"/c2/jobs/j", dailyJob)
	})
}

func TestOnlyAnOperatorGoesBeyondTheCeilings(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{Ceilings: Ceilings{MaxJobsPerCollection: 50, MinRecurrence: time.Hour, MaxCollectionsPerSubscription: 3}}, operator, writerA)
	coll := collections("subA", "rg") + "/c1"
	hourly := `{"properties": {"sku": {"name": "Free"}}}`
	b.mustAs(t, writerA, http.StatusCreated, "PUT", coll, hourly)

	refused := func(r response, field, ceiling string) {
		t.Helper()
		if r.status != http.StatusForbidden || r.errorCode(t) != codeAuthorizationFailed {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		msg := r.json(t)["error"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, field) || !strings.Contains(msg, ceiling) || !strings.Contains(msg, "only an operator") {
			t.Fatalf("message %q does not name %s and %s", msg, field, ceiling)
		}
	}
	t.Run("a writer cannot raise a quota above a ceiling", func(t *testing.T) {
		refused(b.as(t, writerA, "PATCH", coll, `{"properties": {"quota": {"maxJobCount": 2000000000}}}`), "properties.quota.maxJobCount", "ceiling of 50 jobs")
		refused(b.as(t, writerA, "PATCH", coll, `{"properties": {"quota": {"maxRecurrence": {"frequency": "Minute", "interval": 5}}}}`), "properties.quota.maxRecurrence", "every 1h0m0s")
		refused(b.as(t, writerA, "PATCH", coll, `{"properties": {"sku": {"name": "P20Premium"}}}`), "properties.sku.name", "ceiling of 50 jobs")
		refused(b.as(t, writerA, "PUT", collections("subA", "rg")+"/big", `{"properties": {"quota": {"maxJobCount": 51, "maxRecurrence": {"frequency": "Hour"}}}}`), "properties.quota.maxJobCount", "50")
		b.mustAs(t, writerA, http.StatusNotFound, "GET", collections("subA", "rg")+"/big", "")
		b.mustAs(t, writerA, http.StatusOK, "PATCH", coll, `{"properties": {"quota": {"maxJobCount": 50}}}`)
	})
	t.Run("an operator can, and a writer may then change the rest", func(t *testing.T) {
		r := b.mustAs(t, operator, http.StatusOK, "PATCH", coll, `{"properties": {"quota": {"maxJobCount": 2000000000}}}`)
		if !strings.Contains(string(r.body), `"maxJobCount":2000000000`) {
			t.Fatalf("body: %s", r.body)
		}
		b.mustAs(t, writerA, http.StatusOK, "PATCH", coll, `{"tags": {"team": "web"}}`)
		refused(b.as(t, writerA, "PATCH", coll, `{"properties": {"quota": {"maxJobCount": 2000000001}}}`), "properties.quota.maxJobCount", "ceiling of 50 jobs")
	})
	t.Run("a writer cannot create more collections than the subscription's ceiling", func(t *testing.T) {
		b.mustAs(t, writerA, http.StatusCreated, "PUT", collections("subA", "rg")+"/c2", hourly)
		b.mustAs(t, writerA, http.StatusCreated, "PUT", collections("subA", "rg2")+"/c3", hourly)
		r := b.mustAs(t, writerA, http.StatusConflict, "PUT", collections("subA", "rg2")+"/c4", hourly)
		if r.errorCode(t) != codeQuotaExceeded || !strings.Contains(string(r.body), "ceiling of 3 collections per subscription") {
			t.Fatalf("body: %s", r.body)
		}
		b.mustAs(t, writerA, http.StatusOK, "PUT", collections("subA", "rg2")+"/c3", hourly)
		b.mustAs(t, operator, http.StatusCreated, "PUT", collections("subA", "rg2")+"/c4", hourly)
	})
}

func TestTheFlatTokensAreOperators(t *testing.T) {
	t.Parallel()
	b := setup(t, token1)
	b.do(t, "PUT", base+"/jc", `{"properties": {}}`, "Authorization", "Bearer "+token1)
	r := b.do(t, "PATCH", base+"/jc", `{"properties": {"quota": {"maxJobCount": 2000000000}}}`, "Authorization", "Bearer "+token1)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	short := token1[:MinTokenLength-1]
	if r := b.do(t, "GET", base, "", "Authorization", "Bearer "+short); r.status != http.StatusUnauthorized {
		t.Fatalf("a token of %d characters: status %d", len(short), r.status)
	}
}

func TestEveryChangeIsLoggedWithItsPrincipal(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, writerA)
	coll := collections("subA", "rg") + "/c1"
	b.mustAs(t, writerA, http.StatusCreated, "PUT", coll, `{"properties": {}}`)
	b.mustAs(t, writerA, http.StatusCreated, "PUT", coll+"/jobs/j", dailyJob)
	b.mustAs(t, writerA, http.StatusOK, "PUT", coll+"/jobs/j", dailyJob)
	b.mustAs(t, writerA, http.StatusOK, "DELETE", coll+"/jobs/j", "")
	b.mustAs(t, writerA, http.StatusOK, "POST", coll+"/disable", "")
	b.mustAs(t, writerA, http.StatusOK, "DELETE", coll, "")
	logs := b.logs.String()
	for _, event := range []string{"job collection created", "job created", "job updated", "job deleted", "job collection disabled", "job collection deleted"} {
		if !b.logs.Contains(`msg="`+event+`"`, "principal=token:writer-a", "request_id=") {
			t.Errorf("no %q line with the principal:\n%s", event, logs)
		}
	}
	if !b.logs.Contains(`msg="job created"`, "job="+coll+"/jobs/j") {
		t.Errorf("the job created is not named:\n%s", logs)
	}
	if strings.Contains(logs, writerA.token()) {
		t.Fatalf("the token is in the logs:\n%s", logs)
	}
}
