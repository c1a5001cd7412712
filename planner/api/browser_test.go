package api

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

const browserColl = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc"

// send sends one request to b's API with the Host and headers given, and
// returns the status and body.
func (b *bundle) send(t *testing.T, method, path, host, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path+"?api-version=2016-03-01", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// loopbackHosts serves b's API as the service does on loopback with no
// public URL.
func loopbackHosts(t *testing.T) *bundle {
	return setupWith(t, testkit.NATS(t), Config{Hosts: []string{"localhost", "127.0.0.1", "::1"}})
}

func TestARebindingHostIsRefused(t *testing.T) {
	b := loopbackHosts(t)
	b.mustDo(t, http.StatusCreated, "PUT", browserColl, collectionBody)
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:80", "127.0.0.1.attacker.example"} {
		status, body := b.send(t, "GET", browserColl, host, "")
		if status != http.StatusMisdirectedRequest || !strings.Contains(body, codeMisdirected) {
			t.Errorf("Host %s: status %d, want 421\n%s", host, status, body)
		}
	}
	for _, host := range []string{"", "localhost:8080", "LOCALHOST", "[::1]:8080"} {
		if status, body := b.send(t, "GET", browserColl, host, ""); status != http.StatusOK {
			t.Errorf("Host %q: status %d, want 200\n%s", host, status, body)
		}
	}
}

// twoJobs serves an API with cfg holding a collection of two jobs.
func twoJobs(t *testing.T, cfg Config) *bundle {
	b := setupWith(t, testkit.NATS(t), cfg)
	b.mustDo(t, http.StatusCreated, "PUT", browserColl, collectionBody)
	for _, job := range []string{"a", "b"} {
		b.mustDo(t, http.StatusCreated, "PUT", browserColl+"/jobs/"+job,
			`{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}}`)
	}
	return b
}

func TestNextLinkIgnoresTheHostHeader(t *testing.T) {
	b := twoJobs(t, Config{})
	req, _ := http.NewRequest("GET", b.srv.URL+browserColl+"/jobs?api-version=2016-03-01&$top=1", nil)
	req.Host = "rebind.attacker.example"
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(data), "attacker") {
		t.Fatalf("nextLink echoes the Host header: %s", data)
	}
	if !strings.Contains(string(data), `"nextLink":"`+b.srv.URL+browserColl) {
		t.Fatalf("nextLink does not start with the address the API listens on (%s): %s", b.srv.URL, data)
	}

	public, _ := url.Parse("https://scheduler.example.com/base")
	p := twoJobs(t, Config{PublicURL: public, Hosts: []string{"127.0.0.1"}})
	listing := p.do(t, "GET", browserColl+"/jobs?$top=1", "")
	if !strings.Contains(string(listing.body), `"nextLink":"https://scheduler.example.com/base`+browserColl) {
		t.Fatalf("nextLink does not start with the public URL: %s", listing.body)
	}
}

func TestCrossSiteRequestsCannotChangeState(t *testing.T) {
	b := loopbackHosts(t)
	b.mustDo(t, http.StatusCreated, "PUT", browserColl, collectionBody)
	disable := browserColl + "/disable"
	refused := []struct {
		name   string
		header []string
		want   int
	}{
		{"a form post", []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"a multipart form", []string{"Content-Type", "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType},
		{"text/plain", []string{"Content-Type", "text/plain;charset=UTF-8"}, http.StatusUnsupportedMediaType},
		{"a foreign Origin", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"a foreign Origin with JSON", []string{"Origin", "http://evil.example", "Content-Type", "application/json"}, http.StatusForbidden},
		{"a cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
	}
	for _, c := range refused {
		if status, body := b.send(t, "POST", disable, "", "", c.header...); status != c.want {
			t.Errorf("%s: status %d, want %d\n%s", c.name, status, c.want, body)
		}
	}
	state := b.mustDo(t, http.StatusOK, "GET", browserColl, "").json(t)["properties"].(map[string]any)["state"]
	if state != "Enabled" {
		t.Fatalf("a refused request changed the collection: state %v", state)
	}
	// A client that is not a browser, and a page of the API's own origin,
	// may.
	if status, body := b.send(t, "POST", disable, "", "", "Origin", b.srv.URL); status != http.StatusOK {
		t.Fatalf("same-origin POST: status %d\n%s", status, body)
	}
	if status, body := b.send(t, "POST", browserColl+"/enable", "", "", "Content-Type", "application/json"); status != http.StatusOK {
		t.Fatalf("POST without Origin: status %d\n%s", status, body)
	}
}
