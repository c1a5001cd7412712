package contracts

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()

	day := 24 * time.Hour
	tests := []struct {
		name string
		in   string
		want time.Duration
	}{
		{"ISO seconds parse", "PT30S", 30 * time.Second},
		{"ISO minutes parse", "PT1M", time.Minute},
		{"ISO days parse", "P1D", day},
		{"ISO hours and minutes add up", "PT1H30M", 90 * time.Minute},
		{"ISO fractional seconds parse", "PT0.5S", 500 * time.Millisecond},
		{"ISO lower case parses", "pt1h30m", 90 * time.Minute},
		{"ISO year is 365 days", "P1Y", 365 * day},
		{"ISO month before T is 30 days", "P1M", 30 * day},
		{"ISO week is 7 days", "P2W", 14 * day},
		{"ISO every component adds up", "P1Y1M1W1DT1H1M1.25S", (365+30+7+1)*day + time.Hour + time.Minute + 1250*time.Millisecond},
		{"ISO zero is a duration", "PT0S", 0},
		{"ISO eighteen months is 540 days", "P18M", 540 * day},
		{"ISO fraction beyond nanoseconds is truncated", "PT0.0000000019S", 1},
		{"ISO negative parses", "-PT30S", -30 * time.Second},
		{"TimeSpan minute parses", "00:01:00", time.Minute},
		{"TimeSpan with days parses", "1.00:00:00", day},
		{"TimeSpan fraction parses", "00:00:30.5", 30*time.Second + 500*time.Millisecond},
		{"TimeSpan seven fraction digits parse", "00:00:00.0000001", 100 * time.Nanosecond},
		{"TimeSpan hh:mm parses", "01:30", 90 * time.Minute},
		{"TimeSpan single digits parse", "1:2:3", time.Hour + 2*time.Minute + 3*time.Second},
		{"TimeSpan upper bounds parse", "23:59:59", day - time.Second},
		{"TimeSpan negative parses", "-00:00:15", -15 * time.Second},
		{"bare integer is days", "5", 5 * day},
		{"longest representable day count parses", "106751", 106751 * day},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tt.in)
			if err != nil {
				t.Fatalf("ParseDuration(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseDurationRejects(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"words are not a duration", "1 minute", `"1 minute" is not a duration; use ISO 8601 (PT30S) or hh:mm:ss (00:00:30)`},
		{"empty is not a duration", "", `"" is not a duration`},
		{"P alone has no component", "P", "is not a duration"},
		{"PT alone has no component", "PT", "is not a duration"},
		{"T without a time component is rejected", "P1DT", "is not a duration"},
		{"designators out of order are rejected", "PT1M1H", "is not a duration"},
		{"a designator twice is rejected", "PT1S1S", "is not a duration"},
		{"a fraction on minutes is rejected", "PT1.5M", "is not a duration"},
		{"a decimal point without digits is rejected", "PT1.S", "is not a duration"},
		{"a number without a designator is rejected", "PT5", "is not a duration"},
		{"a designator without a number is rejected", "PTS", "is not a duration"},
		{"hours before T are rejected", "P1H", "is not a duration"},
		{"a long s does not pass for S", "PT1ſ", "is not a duration"},
		{"a negative component is rejected", "P-1D", "is not a duration"},
		{"hours above 23 are rejected", "24:00:00", "is not a duration"},
		{"minutes above 59 are rejected", "00:60:00", "is not a duration"},
		{"seconds above 59 are rejected", "00:00:60", "is not a duration"},
		{"three-digit fields are rejected", "000:00:00", "is not a duration"},
		{"eight fraction digits are rejected", "00:00:00.00000001", "is not a duration"},
		{"an empty fraction is rejected", "00:00:01.", "is not a duration"},
		{"four clock fields are rejected", "1:00:00:00", "is not a duration"},
		{"days without a clock are rejected", "1.", "is not a duration"},
		{"empty days are rejected", ".00:00:00", "is not a duration"},
		{"two signs are rejected", "--1", "is not a duration"},
		{"a plus sign is rejected", "+PT1S", "is not a duration"},
		{"surrounding space is rejected", " PT1S", "is not a duration"},
		{"Go syntax is rejected", "30s", "is not a duration"},
		{"too many ISO years overflow", "P300Y", `"P300Y" is too long`},
		{"too many ISO seconds overflow", "PT9223372037S", "is too long"},
		{"huge digit strings overflow", "P99999999999999999999999999D", "is too long"},
		{"too many TimeSpan days overflow", "106752.00:00:00", "is too long"},
		{"too many bare days overflow", "106752", "is too long"},
		{"a sum past the limit overflows", "P106751DT23H59M59S", "is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tt.in)
			if err == nil {
				t.Fatalf("ParseDuration(%q) = %v, want an error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDuration(%q) error %q, want it to contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, seed := range []string{"PT30S", "P1Y2M3W4DT5H6M7.8S", "1.02:03:04.5", "5", "-00:00:15", "P106751D", "pt0.0000000001s"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil || strings.HasPrefix(s, "-") {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative without a sign", s, d)
		}
		if neg, err := ParseDuration("-" + s); err != nil || neg != -d {
			t.Fatalf("ParseDuration(%q) = %v, %v; want %v", "-"+s, neg, err, -d)
		}
	})
}
