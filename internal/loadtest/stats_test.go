package loadtest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"no values give 0", nil, 0.5, 0},
		{"one value is every percentile", ms(7), 0.99, 7 * time.Millisecond},
		{"the median of an odd count is the middle", ms(1, 2, 3, 4, 5), 0.5, 3 * time.Millisecond},
		{"the median of an even count is the lower middle", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p90 of 1..100 is 90", ms(hundred...), 0.90, 90 * time.Millisecond},
		{"p99 of 1..100 is 99", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p99 of ten values is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 0.99, 10 * time.Millisecond},
		{"p100 is the largest", ms(1, 2, 3), 1, 3 * time.Millisecond},
		{"p0 is the smallest", ms(1, 2, 3), 0, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	l := Summarize([]time.Duration{30 * time.Millisecond, -10 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond})
	want := Lateness{Count: 4, Min: -10 * time.Millisecond, P50: 10 * time.Millisecond, P90: 50 * time.Millisecond,
		P99: 50 * time.Millisecond, Max: 50 * time.Millisecond, Mean: 20 * time.Millisecond}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
	if (Summarize(nil) != Lateness{}) {
		t.Error("no latenesses must sum up to zeros")
	}
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	t.Run("values land in the bucket whose low edge they reach, and the empty ends are left out", func(t *testing.T) {
		h := Histogram([]time.Duration{5 * time.Millisecond, 7 * time.Millisecond, 9999 * time.Microsecond, 10 * time.Millisecond, 30 * time.Millisecond})
		got := []string{}
		for _, b := range h {
			got = append(got, b.Label()+"="+strconv.Itoa(b.Count))
		}
		want := "5ms – 10ms=3 10ms – 25ms=1 25ms – 50ms=1"
		if strings.Join(got, " ") != want {
			t.Errorf("got %q, want %q", strings.Join(got, " "), want)
		}
	})
	t.Run("early and very late calls have open buckets", func(t *testing.T) {
		h := Histogram([]time.Duration{-time.Millisecond, 0, 2 * time.Minute})
		if len(h) != len(bucketEdges)+1 {
			t.Fatalf("%d buckets, want all %d", len(h), len(bucketEdges)+1)
		}
		if h[0].Label() != "early (< 0)" || h[0].Count != 1 || h[1].Label() != "0s – 5ms" || h[1].Count != 1 {
			t.Errorf("first buckets %+v %+v", h[0], h[1])
		}
		if last := h[len(h)-1]; last.Label() != "≥ 1m0s" || last.Count != 1 {
			t.Errorf("last bucket %+v", last)
		}
	})
	t.Run("no values make no buckets", func(t *testing.T) {
		if h := Histogram(nil); h != nil {
			t.Errorf("got %+v", h)
		}
	})
	t.Run("the text has a bar in proportion to the count, and a short bar for a small count", func(t *testing.T) {
		var late []time.Duration
		for range 100 {
			late = append(late, time.Millisecond)
		}
		late = append(late, 300*time.Millisecond)
		var b strings.Builder
		WriteHistogram(&b, Histogram(late), 20)
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		if len(lines) != 7 { // 0–5ms up to 250ms–500ms
			t.Fatalf("%d lines:\n%s", len(lines), b.String())
		}
		if !strings.HasSuffix(lines[0], " 100   99.0%  "+strings.Repeat("#", 20)) {
			t.Errorf("first line %q", lines[0])
		}
		if !strings.HasSuffix(lines[1], "  0    0.0%  ") {
			t.Errorf("an empty bucket between two others must show with no bar: %q", lines[1])
		}
		if !strings.HasSuffix(lines[6], "  1    1.0%  #") || !strings.HasPrefix(lines[6], "  250ms – 500ms") {
			t.Errorf("last line %q", lines[6])
		}
	})
}
