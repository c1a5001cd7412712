package loadtest

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Results are the figures of a load: which jobs called, how late.
type Results struct {
	// Jobs is how many jobs the load has; Called how many called at
	// least once.
	Jobs, Called int
	// Lost are the jobs that never called, Early those whose first call
	// arrived before their due time, by number.
	Lost, Early []int
	// Duplicates counts the calls beyond the first for the watched
	// occurrences.
	Duplicates int
	// Moved counts the jobs whose first call carried another due time
	// than planned: a one-time job created after its due time runs at
	// once, due when it was created. Their lateness is still from the
	// planned due time.
	Moved int
	// Stray counts requests that named no job of the load or no due
	// time; OtherOccurrences calls for another occurrence than the
	// watched one.
	Stray, OtherOccurrences int
	// FirstDue is the earliest due time, LastCall the latest first call's
	// arrival (zero when none came).
	FirstDue, LastCall time.Time
	// Lateness sums up the first calls' arrival minus their due time.
	Lateness Lateness
	// Histogram counts the first calls by lateness.
	Histogram []Bucket
}

// CallsPerSecond is the calls that came a second from the first due time
// to the last call: the load's throughput. It is 0 when no call came after
// the first due time.
func (r Results) CallsPerSecond() float64 {
	span := r.LastCall.Sub(r.FirstDue).Seconds()
	if r.Called == 0 || span <= 0 {
		return 0
	}
	return float64(r.Called) / span
}

// Lateness sums up a set of latenesses.
type Lateness struct {
	Count                   int
	Min, P50, P90, P99, Max time.Duration
	Mean                    time.Duration
}

// Summarize sums up latenesses in any order; it sorts a copy.
func Summarize(late []time.Duration) Lateness {
	if len(late) == 0 {
		return Lateness{}
	}
	s := slices.Clone(late)
	slices.Sort(s)
	var sum float64
	for _, d := range s {
		sum += float64(d)
	}
	return Lateness{
		Count: len(s), Min: s[0], Max: s[len(s)-1], Mean: time.Duration(sum / float64(len(s))),
		P50: Percentile(s, 0.50), P90: Percentile(s, 0.90), P99: Percentile(s, 0.99),
	}
}

// Percentile is the nearest-rank percentile p (0 to 1) of sorted: the
// smallest value that at least p of the values do not exceed. It is 0 for
// no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Bucket counts the latenesses from Low (included) to High (excluded). The
// first bucket, of early calls, has no Low; the last has no High.
type Bucket struct {
	Low, High     time.Duration
	NoLow, NoHigh bool
	Count         int
}

// bucketEdges are the histogram's edges: finer where a healthy scheduler's
// calls land, coarser where a struggling one's do.
var bucketEdges = []time.Duration{
	0, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// Histogram counts latenesses into buckets: one of early calls (below 0),
// then between bucketEdges, then one from the last edge on. The empty
// buckets before the first and after the last non-empty one are left out.
func Histogram(late []time.Duration) []Bucket {
	b := make([]Bucket, len(bucketEdges)+1)
	b[0] = Bucket{NoLow: true, High: 0}
	for i, e := range bucketEdges {
		b[i+1] = Bucket{Low: e, NoHigh: true}
		if i+1 < len(bucketEdges) {
			b[i+1].High, b[i+1].NoHigh = bucketEdges[i+1], false
		}
	}
	for _, d := range late {
		// The bucket of d is the one after the last edge not above it.
		i, _ := slices.BinarySearch(bucketEdges, d+1)
		b[i].Count++
	}
	first := slices.IndexFunc(b, func(x Bucket) bool { return x.Count > 0 })
	if first < 0 {
		return nil
	}
	last := len(b) - 1
	for b[last].Count == 0 {
		last--
	}
	return b[first : last+1]
}

// Label names the bucket's range: "early", "5ms–10ms", "≥ 1m0s".
func (b Bucket) Label() string {
	switch {
	case b.NoLow:
		return "early (< 0)"
	case b.NoHigh:
		return "≥ " + b.Low.String()
	}
	return b.Low.String() + " – " + b.High.String()
}

// WriteHistogram writes buckets as a text histogram, a line each: the
// range, the count, its share, and a bar of up to width characters in
// proportion to the largest count.
func WriteHistogram(w io.Writer, buckets []Bucket, width int) {
	total, most, label := 0, 0, 0
	for _, b := range buckets {
		total += b.Count
		most = max(most, b.Count)
		label = max(label, len([]rune(b.Label())))
	}
	digits := len(fmt.Sprint(most))
	for _, b := range buckets {
		bar := 0
		if most > 0 {
			bar = int(math.Round(float64(b.Count) / float64(most) * float64(width)))
		}
		if b.Count > 0 && bar == 0 {
			bar = 1 // a bucket with calls always shows
		}
		name := b.Label()
		fmt.Fprintf(w, "  %s%s  %*d  %5.1f%%  %s\n", name, strings.Repeat(" ", label-len([]rune(name))), digits, b.Count,
			100*float64(b.Count)/float64(total), strings.Repeat("#", bar))
	}
}
