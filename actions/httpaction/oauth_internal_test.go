package httpaction

import (
	"encoding/json"
	"fmt"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"strings"
	"testing"
	"time"
)

func TestTokenAnswer(t *testing.T) {
	t.Parallel()
	start := time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		answer string
		want   time.Duration // from start to refresh
	}{
		{`{"expires_in":3600}`, 55 * time.Minute},
		{`{"expires_in":"3599"}`, 3599*time.Second - 5*time.Minute},
		{`{"expires_in":"600"}`, 5 * time.Minute},
		{`{"expires_in":120}`, time.Minute},
		{`{"expires_in":3600.5}`, 55 * time.Minute},
		{fmt.Sprintf(`{"expires_on":"%d"}`, start.Add(time.Hour).Unix()), 55 * time.Minute},
		{fmt.Sprintf(`{"expires_in":"3600","expires_on":"%d"}`, start.Add(2*time.Hour).Unix()), 55 * time.Minute},
		{`{"expires_in":"soon"}`, unknownLifetime / 2},
		{`{}`, unknownLifetime / 2},
		{`{"expires_in":1e30}`, unknownLifetime / 2},
		{`{"expires_in":999999999}`, maxLifetime - 5*time.Minute},
		{fmt.Sprintf(`{"expires_on":%d}`, start.Add(-time.Hour).Unix()), -30 * time.Minute},
	} {
		var a tokenAnswer
		if err := json.Unmarshal([]byte(tc.answer), &a); err != nil {
			t.Errorf("%s: %v", tc.answer, err)
			continue
		}
		if got := a.refreshAt(start).Sub(start); got != tc.want {
			t.Errorf("%s: refresh after %s, want %s", tc.answer, got, tc.want)
		}
	}
}

func TestErrorDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, want string }{
		{`{"error":"invalid_client","error_description":"AADSTS7000215: bad secret the-secret-value.\r\nTrace ID: 1"}`,
			" (invalid_client: AADSTS7000215: bad secret [REDACTED].)"},
		{`{"error":"unauthorized_client"}`, " (unauthorized_client)"},
		{`{"error_description":"only a description"}`, " (only a description)"},
		{`<html>Bad Gateway</html>`, ""},
		{`{}`, ""},
	} {
		if got := errorDetail([]byte(tc.body), "the-secret-value"); got != tc.want {
			t.Errorf("errorDetail(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
	long := `{"error":"x","error_description":"` + strings.Repeat("é", 1000) + `"}`
	if got := errorDetail([]byte(long), ""); len(got) > maxErrorDetail+3 {
		t.Errorf("errorDetail kept %d bytes, want at most %d", len(got), maxErrorDetail+3)
	}
}

func TestTokenCacheBound(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)
	ts := newTokenSource("https://login.example.com", newTokenClient(&netpolicy.Dialer{}, nil), time.Second, func() time.Time { return now })
	for i := range maxTokens + 10 {
		ts.store(ts.key(credential{clientID: fmt.Sprint(i)}), cachedToken{value: "t", refreshAt: now.Add(time.Hour)})
	}
	if n := len(ts.tokens); n != maxTokens {
		t.Errorf("the cache holds %d tokens, want %d", n, maxTokens)
	}
	// A token that is already due for refresh is not kept.
	key := ts.key(credential{clientID: "expired"})
	ts.store(key, cachedToken{value: "t", refreshAt: now})
	if _, ok := ts.cached(key); ok {
		t.Error("a token due for refresh was kept")
	}
}
