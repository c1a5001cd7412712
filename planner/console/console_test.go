package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/service"
)

// Tokens of the token file the tests' planner reads.
var (
	operatorToken = "operator-" + strings.Repeat("o", 32)
	readerToken   = "reader-" + strings.Repeat("r", 32)
)

const (
	collection = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
	consoleJob = "/c/s/rg/c/jobs/ping"
)

// startPlanner runs a planner asking for the tokens of a token file (an
// operator over everything, a reader of subscription s), with a
// collection c holding a job ping, and returns its URL.
func startPlanner(t *testing.T) (string, *testkit.Logs) {
	t.Helper()
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
	ctx := context.Background()
	var logs testkit.Logs
	svc, err := service.Start(ctx, service.Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32),
		TokensFile: tokens, Logger: logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	base := svc.URL()
	auth := []string{"Authorization", "Bearer " + operatorToken, "Content-Type", "application/json"}
	if code, body := testkit.Call(t, "PUT", base+collection+"?api-version=2016-03-01", `{"properties": {"sku": {"name": "Standard"}}}`, auth...); code != http.StatusCreated {
		t.Fatalf("creating the collection: %d %s", code, body)
	}
	job := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com/ping", "method": "GET",
		"authentication": {"type": "Basic", "username": "u", "password": "p4ss"}}},
		"recurrence": {"frequency": "Day", "schedule": {"hours": [9], "minutes": [0]}, "timeZone": "Europe/Berlin"}}}`
	if code, body := testkit.Call(t, "PUT", base+collection+"/jobs/ping?api-version=2016-03-01", job, auth...); code != http.StatusCreated {
		t.Fatalf("creating the job: %d %s", code, body)
	}
	return base, &logs
}

// browser is a client that keeps cookies and does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request and returns the answer with its body.
func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, string(data)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF value of the forms of a page.
func (b *browser) csrf(page string) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no csrf field in the page:\n%s", page)
	}
	return m[1]
}

// signIn signs in with token.
func (b *browser) signIn(token string) {
	b.t.Helper()
	res, page := b.do("GET", "/login?next=%2F", nil)
	if res.StatusCode != http.StatusOK {
		b.t.Fatalf("GET /login: %d", res.StatusCode)
	}
	res, _ = b.do("POST", "/login", url.Values{"csrf": {b.csrf(page)}, "token": {token}, "next": {"/"}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		b.t.Fatalf("signing in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestSigningIn(t *testing.T) {
	t.Parallel()
	base, _ := startPlanner(t)
	b := newBrowser(t, base)

	res, _ := b.do("GET", consoleJob, nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login?next="+url.QueryEscape(consoleJob) {
		t.Fatalf("a page without signing in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "scheduler_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/", session)
	}

	_, page := b.do("GET", "/login", nil)
	res, page = b.do("POST", "/login", url.Values{"csrf": {b.csrf(page)}, "token": {"wrong-" + strings.Repeat("w", 40)}})
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "The token was not accepted.") {
		t.Fatalf("a wrong token: %d\n%s", res.StatusCode, page)
	}
	if strings.Contains(page, "wrong-www") {
		t.Fatal("the sign-in page shows the token it refused")
	}

	b.signIn(operatorToken)
	res, page = b.do("GET", consoleJob, nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "<h1>ping</h1>") {
		t.Fatalf("the job page after signing in: %d\n%s", res.StatusCode, page)
	}
	if strings.Contains(page, "p4ss") {
		t.Fatal("the job page shows the password")
	}
	if !regexp.MustCompile(`<code>action.request.authentication.password</code></th><td>set</td>`).MatchString(page) {
		t.Errorf("the job page does not say the password is set:\n%s", page)
	}

	// A cookie that was changed opens no session.
	for _, c := range b.c.Jar.Cookies(mustURL(t, base)) {
		if c.Name == "scheduler_session" {
			c.Value = c.Value[:len(c.Value)-4] + "AAAA"
			b.c.Jar.SetCookies(mustURL(t, base), []*http.Cookie{c})
		}
	}
	if res, _ = b.do("GET", consoleJob, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a forged session cookie: %d, want a redirect to sign in", res.StatusCode)
	}
}

// another returns a value of the same form as s, s with its first
// character changed.
func another(s string) string {
	if s[0] == 'x' {
		return "y" + s[1:]
	}
	return "x" + s[1:]
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// runs returns how many runs of the job the API was asked for (its audit
// log says each).
func runs(logs *testkit.Logs) int { return strings.Count(logs.String(), "job run requested") }

func TestFormsMustComeFromTheConsole(t *testing.T) {
	t.Parallel()
	base, logs := startPlanner(t)
	b := newBrowser(t, base)
	b.signIn(operatorToken)
	_, page := b.do("GET", consoleJob, nil)
	csrf := b.csrf(page)

	for _, tt := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no csrf value", url.Values{}, nil},
		{"another session's csrf value", url.Values{"csrf": {another(csrf)}}, nil},
		{"sent by a page of another site", url.Values{"csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
	} {
		res, page := b.do("POST", consoleJob+"/run", tt.form, tt.header...)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403\n%s", tt.name, res.StatusCode, page)
		}
	}
	if n := runs(logs); n != 0 {
		t.Fatalf("refused forms ran the job %d times", n)
	}
	res, _ := b.do("POST", consoleJob+"/run", url.Values{"csrf": {csrf}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != consoleJob+"?done=run" {
		t.Fatalf("run now: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if n := runs(logs); n != 1 {
		t.Fatalf("run now asked the API for %d runs, want 1", n)
	}
	if res, _ := b.do("GET", "/", nil, "Host", "rebound.example:80"); res.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("a foreign Host: %d, want 421", res.StatusCode)
	}
}

func TestAReaderSeesAndDoesNoMore(t *testing.T) {
	t.Parallel()
	base, logs := startPlanner(t)
	b := newBrowser(t, base)
	b.signIn(readerToken)
	for _, path := range []string{consoleJob, "/c/s/rg/c"} {
		res, page := b.do("GET", path, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		for _, action := range []string{">Run now<", ">Disable<", ">Enable<", ">Edit<", ">Delete…<", ">New job<", "the collection<"} {
			if strings.Contains(page, action) {
				t.Errorf("%s shows a reader the action %q", path, action)
			}
		}
	}
	_, page := b.do("GET", consoleJob, nil)
	res, page := b.do("POST", consoleJob+"/run", url.Values{"csrf": {b.csrf(page)}})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "needs the role writer") {
		t.Fatalf("a reader's run: %d\n%s", res.StatusCode, page)
	}
	if n := runs(logs); n != 0 {
		t.Fatalf("a reader ran the job %d times", n)
	}
	if res, _ := b.do("GET", "/c/s/rg/c/new", nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("the editor for a reader: %d, want 403", res.StatusCode)
	}
}

func TestTheCollectionPageFiltersOnTheServer(t *testing.T) {
	t.Parallel()
	base, _ := startPlanner(t)
	auth := []string{"Authorization", "Bearer " + operatorToken, "Content-Type", "application/json"}
	for _, name := range []string{"alpha", "beta", "alphabet"} {
		job := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com/", "method": "GET"}}, "recurrence": {"frequency": "Hour"}}}`
		if code, body := testkit.Call(t, "PUT", base+collection+"/jobs/"+name+"?api-version=2016-03-01", job, auth...); code != http.StatusCreated {
			t.Fatalf("%d %s", code, body)
		}
	}
	b := newBrowser(t, base)
	b.signIn(operatorToken)
	res, page := b.do("GET", "/c/s/rg/c?q=alpha", nil, "HX-Request", "true", "HX-Target", "jobs")
	if res.StatusCode != http.StatusOK || strings.Contains(page, "<html") {
		t.Fatalf("the jobs fragment: %d, a whole page: %v", res.StatusCode, strings.Contains(page, "<html"))
	}
	if !strings.Contains(page, "2 jobs match") || !strings.Contains(page, ">alphabet<") || strings.Contains(page, ">beta<") {
		t.Fatalf("search alpha:\n%s", page)
	}
	_, page = b.do("GET", "/c/s/rg/c?state=Disabled", nil)
	if !strings.Contains(page, "0 jobs match") || !strings.Contains(page, "<html") {
		t.Fatalf("state Disabled:\n%s", page)
	}
	res, page = b.do("GET", "/c/s/rg/c?sort=lastExecutionTime+desc&q="+url.QueryEscape(strings.Repeat("x", 300)), nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "$search") {
		t.Fatalf("a search over its limit: %d, want the API's reason on the page\n%s", res.StatusCode, page)
	}
}
