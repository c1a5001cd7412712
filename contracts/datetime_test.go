package contracts

import (
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return loc
}

func TestParseDateTime(t *testing.T) {
	t.Parallel()

	newYork := mustLoad(t, "America/New_York")
	tests := []struct {
		name       string
		in         string
		loc        *time.Location
		want       string // RFC 3339 in UTC
		wantOffset int    // seconds east of UTC of the result's zone
	}{
		{"a date alone is 00:00 that day", "2012-11-04", nil, "2012-11-04T00:00:00Z", 0},
		{"a time without seconds parses", "2012-08-04T00:00Z", nil, "2012-08-04T00:00:00Z", 0},
		{"an offset with a colon is kept", "2013-01-09T09:30:00-08:00", nil, "2013-01-09T17:30:00Z", -8 * 3600},
		{"an offset without a colon is kept", "2013-01-09T09:30:00+0530", nil, "2013-01-09T04:00:00Z", 5*3600 + 1800},
		{"an offset of hours alone is kept", "2013-01-09T09:30:00+01", nil, "2013-01-09T08:30:00Z", 3600},
		{"a zero offset is UTC", "2013-01-09T09:30:00+00:00", nil, "2013-01-09T09:30:00Z", 0},
		{"fractional seconds are dropped", "2016-03-30T20:39:53.8021951Z", nil, "2016-03-30T20:39:53Z", 0},
		{"lower-case t and z are accepted", "2013-01-09t09:30:00z", nil, "2013-01-09T09:30:00Z", 0},
		{"no offset is UTC without a zone", "2026-03-07T02:30", nil, "2026-03-07T02:30:00Z", 0},
		{"no offset is local time in a zone", "2026-03-07T02:30", newYork, "2026-03-07T07:30:00Z", -5 * 3600},
		{"a date alone is local midnight in a zone", "2026-07-01", newYork, "2026-07-01T04:00:00Z", -4 * 3600},
		{"a local time in the spring gap is shifted by the gap", "2026-03-08T02:30:00", newYork, "2026-03-08T07:30:00Z", -4 * 3600},
		{"a local time that occurs twice is the first", "2026-11-01T01:30:00", newYork, "2026-11-01T05:30:00Z", -4 * 3600},
		{"an offset wins over the zone", "2026-03-07T02:30Z", newYork, "2026-03-07T02:30:00Z", 0},
		{"a local mean time offset with seconds is stored in UTC", "1800-01-01T00:00:00", newYork, "1800-01-01T04:56:02Z", 0},
		{"a leap day parses", "2024-02-29T12:00:00Z", nil, "2024-02-29T12:00:00Z", 0},
		{"the first year parses", "0001-01-01T00:00:00Z", nil, "0001-01-01T00:00:00Z", 0},
		{"the last second parses", "9999-12-31T23:59:59Z", nil, "9999-12-31T23:59:59Z", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDateTime(tt.in, tt.loc)
			if err != nil {
				t.Fatalf("ParseDateTime(%q): %v", tt.in, err)
			}
			if s := got.UTC().Format(time.RFC3339Nano); s != tt.want {
				t.Errorf("ParseDateTime(%q) = %s, want %s", tt.in, s, tt.want)
			}
			if _, off := got.Zone(); off != tt.wantOffset {
				t.Errorf("ParseDateTime(%q) has offset %d s, want %d s", tt.in, off, tt.wantOffset)
			}
		})
	}
}

func TestParseDateTimeRejects(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"words are not a date-time", "next tuesday", `"next tuesday" is not an ISO 8601 date-time such as 2026-01-02T15:04:05Z`},
		{"a day that does not exist is rejected", "2023-02-29", "is not an ISO 8601 date-time"},
		{"the 31st of April is rejected", "2026-04-31T00:00:00Z", "is not an ISO 8601 date-time"},
		{"month 13 is rejected", "2026-13-01", "is not an ISO 8601 date-time"},
		{"day 0 is rejected", "2026-01-00", "is not an ISO 8601 date-time"},
		{"year 0 is rejected", "0000-01-01", "is not an ISO 8601 date-time"},
		{"hour 24 is rejected", "2026-01-01T24:00:00Z", "is not an ISO 8601 date-time"},
		{"minute 60 is rejected", "2026-01-01T00:60Z", "is not an ISO 8601 date-time"},
		{"a leap second is rejected", "2016-12-31T23:59:60Z", "is not an ISO 8601 date-time"},
		{"a date with an offset but no time is rejected", "2026-01-01Z", "is not an ISO 8601 date-time"},
		{"a space for T is rejected", "2026-01-01 00:00:00Z", "is not an ISO 8601 date-time"},
		{"an hour alone is rejected", "2026-01-01T10", "is not an ISO 8601 date-time"},
		{"a fraction without digits is rejected", "2026-01-01T10:00:00.Z", "is not an ISO 8601 date-time"},
		{"a fraction without seconds is rejected", "2026-01-01T10:00.5Z", "is not an ISO 8601 date-time"},
		{"an offset of 24 hours is rejected", "2026-01-01T10:00:00+24:00", "is not an ISO 8601 date-time"},
		{"an offset with one digit is rejected", "2026-01-01T10:00:00+1", "is not an ISO 8601 date-time"},
		{"an offset with a three-digit tail is rejected", "2026-01-01T10:00:00+01:000", "is not an ISO 8601 date-time"},
		{"a two-digit year is rejected", "26-01-01", "is not an ISO 8601 date-time"},
		{"a five-digit year is rejected", "10000-01-01", "is not an ISO 8601 date-time"},
		{"trailing text is rejected", "2026-01-01T00:00:00Zjunk", "is not an ISO 8601 date-time"},
		{"empty text is rejected", "", "is not an ISO 8601 date-time"},
		{"an instant before year 1 in UTC is rejected", "0001-01-01T00:00:00+01:00", `"0001-01-01T00:00:00+01:00" is outside the years 0001 to 9999 in UTC`},
		{"an instant after year 9999 in UTC is rejected", "9999-12-31T23:59:59-01:00", "is outside the years 0001 to 9999 in UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDateTime(tt.in, nil)
			if err == nil {
				t.Fatalf("ParseDateTime(%q) = %v, want an error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDateTime(%q) error %q, want it to contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}
