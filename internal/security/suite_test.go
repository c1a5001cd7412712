package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// refusal is one line of the suite's report.
type refusal struct{ item, attack, answer string }

// TestTheSecuritySuite makes each attack of the security review against a
// running scheduler and checks that it is refused; it prints each attack
// with the refusal it met.
func TestTheSecuritySuite(t *testing.T) {
	s := start(t)
	var report []refusal
	refused := func(item, attack, answer string) { report = append(report, refusal{item, attack, answer}) }
	t.Cleanup(func() {
		var b strings.Builder
		for _, r := range report {
			fmt.Fprintf(&b, "  %-3s %-62s → %s\n", r.item, r.attack, r.answer)
		}
		t.Logf("security suite: %d attacks refused\n%s", len(report), b.String())
	})
	s.must(http.StatusCreated, s.operator, "PUT", tenantA, `{"properties": {"sku": {"name": "Standard"}}}`)
	s.must(http.StatusCreated, s.operator, "PUT", tenantB, `{"properties": {"sku": {"name": "Standard"}}}`)

	// A loopback listener every action is pointed at: the address policy
	// must keep it from ever seeing a connection.
	trap := netpolicytest.Listen(t)
	s.startWorker("--storage-queue-endpoint", "http://127.0.0.1:"+trap.Port+"/{account}",
		"--oauth-authority", "http://127.0.0.1:"+trap.Port)

	t.Run("1 every action follows the address policy", func(t *testing.T) {
		s := s.with(t)
		code, body := s.call(s.writer, "PUT", tenantA+"/jobs/bus", `{"properties": {"action": {"type": "ServiceBusQueue",
			"serviceBusQueueMessage": {"namespace": "127.0.0.1:`+trap.Port+`", "queueName": "q", "message": "m",
			"authentication": {"type": "SharedAccessKey", "sasKeyName": "k", "sasKey": "secret"}}}}}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "serviceBusQueueMessage.namespace") {
			t.Fatalf("a Service Bus namespace naming a host and port: %d %s", code, body)
		}
		refused("1", "Service Bus namespace 127.0.0.1:port", "400 naming serviceBusQueueMessage.namespace")

		s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/queue", `{"properties": {"action": {"type": "StorageQueue",
			"queueMessage": {"storageAccount": "contoso", "queueName": "jobs", "sasToken": "sv=1&sig=secret", "message": "m"}}}}`)
		s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/oauth", `{"properties": {"action": {"type": "Http",
			"request": {"uri": "https://example.com/", "method": "GET", "authentication": {"type": "ActiveDirectoryOAuth",
			"tenant": "contoso.onmicrosoft.com", "audience": "https://management.core.windows.net/", "clientId": "c", "secret": "secret"}}}}}`)
		for job, attack := range map[string]string{"queue": "Storage queue endpoint on loopback", "oauth": "OAuth authority on loopback"} {
			msg := s.firstHistory(job)
			if !strings.Contains(msg, "address policy") {
				t.Errorf("%s: history says %q, not the address policy", attack, msg)
			}
			refused("1", attack, "history: "+clip(msg))
		}
		if n := trap.Conns(); n != 0 {
			t.Fatalf("the loopback listener saw %d connections", n)
		}
	})

	t.Run("7 every spelling of loopback is refused, and history names no resolver", func(t *testing.T) {
		s := s.with(t)
		for job, uri := range map[string]string{
			"compat": "http://[::127.0.0.1]:" + trap.Port + "/", "translated": "http://[::ffff:0:7f00:1]:" + trap.Port + "/",
			"mapped": "http://[::ffff:127.0.0.1]:" + trap.Port + "/", "localhost": "http://localhost:" + trap.Port + "/",
		} {
			s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/"+job, httpJob(uri, ""))
			msg := s.firstHistory(job)
			if !strings.Contains(msg, "address policy") {
				t.Errorf("%s: history says %q", uri, msg)
			}
			refused("7", "HTTP action to "+uri, "history: "+clip(msg))
		}
		if n := trap.Conns(); n != 0 {
			t.Fatalf("the loopback listener saw %d connections", n)
		}
		s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/nxdomain", httpJob("http://no-such-host.invalid/", ""))
		msg := s.firstHistory("nxdomain")
		if strings.Contains(msg, "udp") || strings.Contains(msg, ":53") || !strings.Contains(msg, "could not be resolved") {
			t.Errorf("an unresolvable name: history says %q", msg)
		}
		refused("7", "HTTP action to an unresolvable name", "history: "+clip(msg))

		code, body := s.call(s.writer, "PUT", tenantA+"/jobs/tenant", `{"properties": {"action": {"type": "Http",
			"request": {"uri": "https://example.com/", "method": "GET", "authentication": {"type": "ActiveDirectoryOAuth",
			"tenant": "..", "audience": "a", "clientId": "c", "secret": "s"}}}}}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "authentication.tenant") {
			t.Errorf("OAuth tenant ..: %d %s", code, body)
		}
		refused("7", `OAuth tenant ".."`, "400 naming request.authentication.tenant")
	})

	t.Run("2 a PATCH cannot send a stored secret elsewhere", func(t *testing.T) {
		s := s.with(t)
		s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/basic",
			`{"properties": {"startTime": "2099-01-01T00:00:00Z", "action": {"type": "Http", "request": {"uri": "https://a.example.com/", "method": "GET",
			"authentication": {"type": "Basic", "username": "u", "password": "p4ss"}}}, "recurrence": {"frequency": "Day"}}}`)
		code, body := s.call(s.writer, "PATCH", tenantA+"/jobs/basic",
			`{"properties": {"action": {"request": {"uri": "https://evil.example.net/"}}}}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "request.uri") || strings.Contains(body, "p4ss") {
			t.Fatalf("PATCH of request.uri alone: %d %s", code, body)
		}
		refused("2", "PATCH request.uri of a Basic job without the password", "400 naming properties.action.request.uri")
	})

	t.Run("4 tokens are scoped", func(t *testing.T) {
		s := s.with(t)
		if code, _ := s.call(s.reader, "PUT", tenantA+"/jobs/r", httpJob("https://example.com/", "")); code != http.StatusForbidden {
			t.Errorf("a reader's PUT: %d, want 403", code)
		}
		refused("4", "a reader token PUTs a job", "403")
		for _, m := range []string{"GET", "PUT"} {
			if code, _ := s.call(s.writer, m, tenantB+"/jobs/x", httpJob("https://example.com/", "")); code != http.StatusForbidden {
				t.Errorf("a writer of tenant-a: %s in tenant-b: %d, want 403", m, code)
			}
		}
		refused("4", "a tenant-a writer reads and writes tenant-b", "403")
		_, list := s.call(s.writer, "GET", "/subscriptions/tenant-b/providers/Microsoft.Scheduler/jobCollections", "")
		if strings.Contains(list, "tenant-b/resourceGroups") {
			t.Errorf("a tenant-a writer lists tenant-b's collections: %s", list)
		}
		code, body := s.call(s.writer, "PATCH", tenantA, `{"properties": {"quota": {"maxJobCount": 2000000000}}}`)
		if code != http.StatusForbidden || !strings.Contains(body, "maxJobCount") {
			t.Errorf("a writer raises its quota to 2,000,000,000: %d %s", code, body)
		}
		refused("7", "a writer PATCHes quota.maxJobCount 2,000,000,000", "403 naming the ceiling")
		if code, _ := s.call("", "GET", tenantA, ""); code != http.StatusUnauthorized {
			t.Errorf("no token: %d, want 401", code)
		}
		if code, _ := s.call("", "GET", "/metrics", ""); code != http.StatusUnauthorized {
			t.Errorf("/metrics without a token: %d, want 401", code)
		}
		refused("6", "/metrics without a token on the API port", "401")
	})

	t.Run("5 a browser cannot be used against the API", func(t *testing.T) {
		s := s.with(t)
		if code, _ := s.callHost("rebind.attacker.example", s.operator, "GET", tenantA, ""); code != http.StatusMisdirectedRequest {
			t.Errorf("Host rebind.attacker.example: %d, want 421", code)
		}
		refused("5", "Host: rebind.attacker.example", "421")
		code, _ := s.call(s.operator, "POST", tenantA+"/disable", "", "Content-Type", "application/x-www-form-urlencoded")
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("a form POST to disable: %d, want 415", code)
		}
		refused("5", "form POST to …/disable", "415")
		if code, _ := s.call(s.operator, "POST", tenantA+"/disable", "", "Origin", "http://evil.example"); code != http.StatusForbidden {
			t.Errorf("a POST from Origin http://evil.example: %d, want 403", code)
		}
		refused("5", "POST …/disable with Origin: http://evil.example", "403")
		s.must(http.StatusCreated, s.operator, "PUT", tenantA+"/jobs/zz", httpJob("https://example.com/", `"startTime": "2099-01-01T00:00:00Z",`))
		_, page := s.callHost("localhost", s.operator, "GET", tenantA+"/jobs?$top=1", "")
		if !strings.Contains(page, `"nextLink":"`+s.api) {
			t.Errorf("nextLink does not start with the API's own address %s: %s", s.api, clip(page))
		}
	})

	t.Run("6 transport is encrypted", func(t *testing.T) {
		s := s.with(t)
		res, err := http.Get(strings.Replace(s.api, "https://", "http://", 1) + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				t.Errorf("the API answers plain HTTP")
			}
		}
		refused("6", "plain HTTP to the API", "no answer but a TLS error")
		// A role without the client certificate is refused by NATS.
		code, out := s.run(nil, "serve", "history", "--listen", "127.0.0.1:0", "--nats-url", s.ns.ClientURL(), "--nats-ca-file", s.ca.File)
		if code == 0 || !strings.Contains(strings.ToLower(out), "certificate") {
			t.Errorf("a role without a client certificate: exit %d\n%s", code, clip(out))
		}
		refused("6", "a role connects to NATS without a client certificate", fmt.Sprintf("exit %d", code))
	})

	t.Run("7 weak configuration is refused at start", func(t *testing.T) {
		s := s.with(t)
		for _, c := range []struct {
			attack string
			env    []string
			args   []string
			says   string
		}{
			{"an all-zero encryption key", []string{"SCHEDULER_ENCRYPTION_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},
				[]string{"serve", "planner"}, "weak"},
			{"a 1-character API token", nil, []string{"serve", "planner", "--api-tokens", "x", "--nats-url", "nats://127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1"}, "32"},
			{"no token beyond loopback", nil, []string{"serve", "planner", "--listen", "0.0.0.0:0", "--nats-url", "nats://127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1"}, "--api-tokens"},
		} {
			code, out := s.run(c.env, c.args...)
			if code == 0 || !strings.Contains(out, c.says) {
				t.Errorf("%s: exit %d\n%s", c.attack, code, clip(out))
			}
			refused("7", c.attack, fmt.Sprintf("exit %d naming %s", code, c.says))
		}
	})

	t.Run("3 an execution changed after it was sealed is not performed", func(t *testing.T) {
		s := s.with(t)
		// Now a worker that may reach loopback: without the binding, the
		// changed execution would deliver the password to the trap.
		var legit atomic.Int32
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, _, ok := r.BasicAuth(); ok {
				legit.Add(1)
			}
		}))
		t.Cleanup(target.Close)
		s.startWorker("--allow-loopback")
		results := make(chan *nats.Msg, 1024)
		sub, err := s.nc.ChanSubscribe(contracts.ResultSubjectPrefix+">", results)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		executions := make(chan *nats.Msg, 1)
		// Only this job's executions: other jobs of the suite are retrying.
		execSub, err := s.nc.Subscribe(contracts.ExecSubjectPrefix+">", func(m *nats.Msg) {
			if strings.HasSuffix(m.Subject, ".sealed") {
				select {
				case executions <- m:
				default:
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer execSub.Unsubscribe()
		s.must(http.StatusCreated, s.writer, "PUT", tenantA+"/jobs/sealed",
			`{"properties": {"action": {"type": "Http", "request": {"uri": "`+target.URL+`/", "method": "GET",
			"authentication": {"type": "Basic", "username": "u", "password": "p4ss"}}}}}`)
		testkit.Eventually(t, 60*time.Second, func() bool { return legit.Load() == 1 }, "the job never reached its target")
		// The attempt is over once its result is out; a copy arriving
		// while it is in flight would be skipped as a second delivery.
		testkit.Eventually(t, 60*time.Second, func() bool {
			for {
				select {
				case r := <-results:
					if strings.Contains(string(r.Data), `"job":"sealed"`) {
						return true
					}
				default:
					return false
				}
			}
		}, "no result for the job")

		js, err := jetstream.New(s.nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The execution as the planner published it, seen in passing.
		var m *nats.Msg
		select {
		case m = <-executions:
		case <-ctx.Done():
			t.Fatal("no execution was seen on NATS")
		}
		// And acknowledged: until then the worker holds the attempt as in
		// flight, and would skip a copy as a second delivery.
		exec, err := js.Stream(ctx, contracts.ExecStream)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 30*time.Second, func() bool {
			info, err := exec.Info(context.Background(), jetstream.WithSubjectFilter(m.Subject))
			return err == nil && len(info.State.Subjects) == 0
		}, "the execution was not acknowledged")
		var x map[string]any
		if err := json.Unmarshal(m.Data, &x); err != nil {
			t.Fatal(err)
		}
		x["action"].(map[string]any)["request"].(map[string]any)["uri"] = "http://" + trap.Addr.String() + "/"
		changed, _ := json.Marshal(x)
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Data: changed}, jetstream.WithMsgID("changed-"+m.Header.Get("Nats-Msg-Id"))); err != nil {
			t.Fatal(err)
		}
		var why string
		testkit.Eventually(t, 60*time.Second, func() bool {
			for {
				select {
				case r := <-results:
					// The result's error, in whatever envelope it travels.
					if i := strings.Index(string(r.Data), "not bound to this destination"); i >= 0 {
						why = string(r.Data[max(0, i-40):min(len(r.Data), i+80)])
						return true
					}
				default:
					return false
				}
			}
		}, "no result refuses the changed execution")
		if n := trap.Conns(); n != 0 {
			t.Fatalf("the changed execution reached its new destination (%d connections)", n)
		}
		refused("3", "EXEC message republished with request.uri changed", "not performed: "+clip(why))
	})
}

// httpJob is an HTTP job calling uri; extra goes into its properties.
func httpJob(uri, extra string) string {
	return `{"properties": {` + extra + `"action": {"type": "Http", "request": {"uri": "` + uri + `", "method": "GET"}}}}`
}

// clip shortens s for the report.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 110 {
		return s[:110] + "…"
	}
	return s
}
