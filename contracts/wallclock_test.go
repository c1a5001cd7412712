package contracts

import (
	"testing"
	"time"
)

func TestWallClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		zone string
		wall string // local wall-clock time
		want string // the instant, UTC
	}{
		{"an ordinary New York time", "America/New_York", "2026-07-01T12:00:00", "2026-07-01T16:00:00Z"},
		{"a New York time in the spring-forward gap runs shifted by the gap", "America/New_York", "2026-03-08T02:30:00", "2026-03-08T07:30:00Z"},
		{"the start of the New York gap is its end", "America/New_York", "2026-03-08T02:00:00", "2026-03-08T07:00:00Z"},
		{"just after the New York gap", "America/New_York", "2026-03-08T03:00:00", "2026-03-08T07:00:00Z"},
		{"a New York time in the fall-back overlap is the first (EDT)", "America/New_York", "2026-11-01T01:30:00", "2026-11-01T05:30:00Z"},
		{"just after the New York overlap is EST", "America/New_York", "2026-11-01T02:00:00", "2026-11-01T07:00:00Z"},
		{"a Berlin time in the gap", "Europe/Berlin", "2026-03-29T02:30:00", "2026-03-29T01:30:00Z"},
		{"a Berlin time in the overlap is the first (CEST)", "Europe/Berlin", "2026-10-25T02:30:00", "2026-10-25T00:30:00Z"},
		{"a Sydney time in the gap", "Australia/Sydney", "2026-10-04T02:30:00", "2026-10-03T16:30:00Z"},
		{"a Sydney time in the overlap is the first (AEDT)", "Australia/Sydney", "2026-04-05T02:30:00", "2026-04-04T15:30:00Z"},
		{"Lord Howe's 30-minute gap: 02:15 runs at 02:45 (+11:00)", "Australia/Lord_Howe", "2026-10-04T02:15:00", "2026-10-03T15:45:00Z"},
		{"Lord Howe's 30-minute overlap is the first", "Australia/Lord_Howe", "2026-04-05T01:45:00", "2026-04-04T14:45:00Z"},
		{"Santiago skips midnight: 00:30 runs at 01:30", "America/Santiago", "2026-09-06T00:30:00", "2026-09-06T04:30:00Z"},
		{"UTC is itself", "UTC", "2026-03-08T02:30:00", "2026-03-08T02:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc, err := time.LoadLocation(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			w, err := time.Parse("2006-01-02T15:04:05", tt.wall)
			if err != nil {
				t.Fatal(err)
			}
			got := WallClock(loc, w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second())
			if s := got.UTC().Format(time.RFC3339); s != tt.want {
				t.Fatalf("WallClock(%s %s) = %s, want %s", tt.zone, tt.wall, s, tt.want)
			}
			if got.Location() != loc {
				t.Fatalf("result in %v, want %v", got.Location(), loc)
			}
		})
	}
}
