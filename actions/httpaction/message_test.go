package httpaction

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{60 * time.Second, "60s"},
		{59870 * time.Millisecond, "60s"},
		{90 * time.Second, "90s"},
		{time.Second, "1s"},
		{100 * time.Millisecond, "100ms"},
		{99*time.Millisecond + 800*time.Microsecond, "100ms"},
		{0, "0s"},
		{-time.Second, "0s"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestHeaderText(t *testing.T) {
	t.Parallel()

	t.Run("sorts the names and joins repeated values", func(t *testing.T) {
		t.Parallel()
		h := http.Header{"Vary": {"Accept-Encoding"}, "Cache-Control": {"private"}, "Set-Cookie": {"a=1", "b=2"}}
		want := "Cache-Control: private\r\nSet-Cookie: a=1, b=2\r\nVary: Accept-Encoding\r\n"
		if got := headerText(h); got != want {
			t.Errorf("headerText = %q, want %q", got, want)
		}
	})

	t.Run("keeps whole lines up to the bound", func(t *testing.T) {
		t.Parallel()
		h := http.Header{"A": {strings.Repeat("a", 3000)}, "B": {strings.Repeat("b", 3000)}, "C": {"c"}}
		got := headerText(h)
		if len(got) > maxHeaderText || !strings.HasPrefix(got, "A: ") || strings.Contains(got, "B: ") || !strings.HasSuffix(got, "\r\n") {
			t.Errorf("headerText kept %d bytes: %.40q…", len(got), got)
		}
	})
}

func TestStatusText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code   int
		status string
		want   string
	}{
		{200, "200 OK", "OK"},
		{500, "500 Server Error", "Internal Server Error"},
		{599, "599 Network Timeout", "Network Timeout"},
		{599, "599", "599"},
		{599, "599 " + strings.Repeat("x", 1<<20), strings.Repeat("x", maxReasonText) + "…"}, // a target's 1 MB reason
	} {
		if got := statusText(&http.Response{StatusCode: tc.code, Status: tc.status}); got != tc.want {
			t.Errorf("statusText(%q) = %q, want %q", tc.status, got, tc.want)
		}
	}
}
