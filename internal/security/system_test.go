package security

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
)

// Scopes of the suite's tokens: the writer and the reader hold the
// subscription "tenant-a" only.
const (
	tenantA = "/subscriptions/tenant-a/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
	tenantB = "/subscriptions/tenant-b/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc"
)

// system is the scheduler as production runs it, each role a process of
// the binary.
type system struct {
	t   *testing.T
	bin string
	dir string
	env []string
	ca  *testkit.CA
	ns  *server.Server
	// natsFlags connect a role to NATS over mutual TLS.
	natsFlags []string
	// nc is the suite's own NATS connection, as an attacker who can
	// publish on NATS would have.
	nc *nats.Conn
	// api is the planner's https:// root; client trusts the suite's CA.
	api    string
	client *http.Client
	// Tokens of each role.
	operator, writer, reader string
	planner, history         *testkit.Process
	worker                   *testkit.Process
	workerPort               int
}

func start(t *testing.T) *system {
	t.Helper()
	s := &system{t: t, bin: testkit.SchedulerBinary(t), dir: t.TempDir(), ca: testkit.NewCA(t)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCHEDULER_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "SCHEDULER_ENCRYPTION_KEY="+seal.GenerateKey())

	// NATS that demands a client certificate of the suite's CA.
	s.ns = testkit.NATSWith(t, server.Options{TLSConfig: s.ca.ServerTLS(t, true), TLSVerify: true, TLSTimeout: 5})
	role := s.ca.Client(t, "roles")
	s.natsFlags = []string{"--nats-url", s.ns.ClientURL(), "--nats-ca-file", s.ca.File,
		"--nats-cert-file", role.CertFile, "--nats-key-file", role.KeyFile}
	var err error
	s.nc, err = nats.Connect(s.ns.ClientURL(), nats.RootCAs(s.ca.File), nats.ClientCert(role.CertFile, role.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.nc.Close)

	// Redis over TLS.
	mr := miniredis.NewMiniRedis()
	if err := mr.StartTLS(s.ca.ServerTLS(t, false)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mr.Close)

	// A token file of three scoped tokens.
	s.operator, s.writer, s.reader = api.NewToken(), api.NewToken(), api.NewToken()
	tokens := filepath.Join(s.dir, "tokens.yaml")
	entry := func(name, token, role, scope string) string {
		return fmt.Sprintf("  - {name: %s, sha256: %s, role: %s, scopes: [%q]}\n", name, api.HashToken(token), role, scope)
	}
	file := "tokens:\n" + entry("ops", s.operator, "operator", "*") +
		entry("team-a", s.writer, "writer", "/subscriptions/tenant-a") + entry("dashboards-a", s.reader, "reader", "/subscriptions/tenant-a")
	if err := os.WriteFile(tokens, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}

	cert := s.ca.Server(t)
	port := testkit.FreePort(t)
	s.planner = s.role("planner", port, "--redis-url", "rediss://"+mr.Addr(), "--redis-ca-file", s.ca.File,
		"--tls-cert-file", cert.CertFile, "--tls-key-file", cert.KeyFile, "--api-tokens-file", tokens)
	s.api = "https://127.0.0.1:" + strconv.Itoa(port)
	s.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool}}}
	s.waitReady(s.api)
	s.history = s.role("history", testkit.FreePort(t))
	s.waitReady("http://" + s.history.Name)
	return s
}

// role starts a role of the binary on 127.0.0.1:port, connected to NATS
// over mutual TLS; its Name is its address.
func (s *system) role(kind string, port int, flags ...string) *testkit.Process {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"serve", kind, "--listen", addr, "--log-format", "text"}, s.natsFlags...)
	p := testkit.StartProcess(s.t, addr, filepath.Join(s.dir, kind+"-"+strconv.Itoa(port)+".log"), s.env, s.bin, append(args, flags...)...)
	return p
}

// with returns s for the subtest t.
func (s *system) with(t *testing.T) *system {
	c := *s
	c.t = t
	return &c
}

// startWorker starts the worker with flags, stopping the one before.
func (s *system) startWorker(flags ...string) {
	if s.worker != nil {
		_ = s.worker.Kill()
	}
	s.workerPort = testkit.FreePort(s.t)
	s.worker = s.role("worker", s.workerPort, append([]string{"--drain-timeout", "1s"}, flags...)...)
	s.waitReady("http://" + s.worker.Name)
}

// waitReady waits until base's /readyz answers 200.
func (s *system) waitReady(base string) {
	s.t.Helper()
	testkit.Eventually(s.t, 90*time.Second, func() bool {
		res, err := s.client.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "%s is not ready", base)
}

// call sends a request to the API with token (none when empty) and
// headers, and returns the status and body.
func (s *system) call(token, method, path, body string, header ...string) (int, string) {
	s.t.Helper()
	return s.callHost("", token, method, path, body, header...)
}

// callHost is call with the Host header host (the URL's when empty).
func (s *system) callHost(host, token, method, path, body string, header ...string) (int, string) {
	s.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(method, s.api+path+sep+"api-version=2016-03-01", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// must is call that fails the test unless the status is want.
func (s *system) must(want int, token, method, path, body string) string {
	s.t.Helper()
	code, answer := s.call(token, method, path, body)
	if code != want {
		s.t.Fatalf("%s %s: %d, want %d\n%s", method, path, code, want, answer)
	}
	return answer
}

// firstHistory waits for the job's first history entry and returns its
// message.
func (s *system) firstHistory(job string) string {
	s.t.Helper()
	var message string
	testkit.Eventually(s.t, 60*time.Second, func() bool {
		code, body := s.call(s.operator, "GET", tenantA+"/jobs/"+job+"/history", "")
		if code != http.StatusOK {
			return false
		}
		var page struct {
			Value []struct {
				Properties struct {
					Message string `json:"message"`
				} `json:"properties"`
			} `json:"value"`
		}
		if json.Unmarshal([]byte(body), &page) != nil || len(page.Value) == 0 {
			return false
		}
		message = page.Value[len(page.Value)-1].Properties.Message
		return true
	}, "job %s has no history", job)
	return message
}

// run runs the binary with args and the suite's environment plus env,
// expecting it to stop at once, and returns its exit code and output.
func (s *system) run(env []string, args ...string) (int, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Env = append(append([]string(nil), s.env...), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		s.t.Fatalf("running %v: %v", args, err)
	}
	return 0, string(out)
}
