package contracts

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Calendar units of ISO 8601 durations, which have no fixed length. A
// duration is an elapsed time here, so each unit is given one.
const (
	isoYear  = 365 * 24 * time.Hour
	isoMonth = 30 * 24 * time.Hour
	isoWeek  = 7 * 24 * time.Hour
	isoDay   = 24 * time.Hour
)

// errDurationOverflow says a duration is longer than a time.Duration holds.
var errDurationOverflow = errors.New("duration overflow")

// ParseDuration parses the two duration formats the original service
// accepted, as retryInterval and timeToLive:
//
//   - ISO 8601, case-insensitive: P[nY][nM][nW][nD][T[nH][nM][n[.f]S]] with at
//     least one component, such as PT30S, PT1M, P1D, PT1H30M or PT0.5S. A year
//     (Y) counts as 365 days and a month (M before T) as 30 days; only seconds
//     may have a fraction.
//   - .NET TimeSpan text: [-][d.]hh:mm[:ss[.fffffff]] with hh 0–23 and mm, ss
//     0–59, such as 00:01:00, 1.00:00:00 or 00:00:30.5; or a whole number of
//     days such as 5.
//
// A leading minus sign gives a negative duration; it parses, and validation
// rejects it. A duration too long for time.Duration (about 292 years) is an
// error.
func ParseDuration(s string) (time.Duration, error) {
	body, negative := strings.CutPrefix(s, "-")
	var (
		d   time.Duration
		err error
	)
	if len(body) > 0 && (body[0] == 'P' || body[0] == 'p') {
		d, err = parseISODuration(body[1:])
	} else {
		d, err = parseTimeSpan(body)
	}
	switch {
	case errors.Is(err, errDurationOverflow):
		return 0, fmt.Errorf("%q is too long; a duration must be shorter than about 292 years (P106751D)", s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration; use ISO 8601 (PT30S) or hh:mm:ss (00:00:30)", s)
	}
	if negative {
		d = -d
	}
	return d, nil
}

// upperASCII upper-cases ASCII letters only, so that no other letter can
// turn into a designator (strings.ToUpper maps "ſ" to "S").
func upperASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// isoComponent is one designator of an ISO 8601 duration and its unit.
type isoComponent struct {
	designator byte
	unit       time.Duration
}

var (
	isoDateComponents = []isoComponent{{'Y', isoYear}, {'M', isoMonth}, {'W', isoWeek}, {'D', isoDay}}
	isoTimeComponents = []isoComponent{{'H', time.Hour}, {'M', time.Minute}, {'S', time.Second}}
)

// parseISODuration parses what follows the P of an ISO 8601 duration.
func parseISODuration(s string) (time.Duration, error) {
	datePart, timePart, hasTime := strings.Cut(upperASCII(s), "T")
	if hasTime && timePart == "" {
		return 0, errors.New("a T without a time component")
	}
	date, err := sumComponents(datePart, isoDateComponents, false)
	if err != nil {
		return 0, err
	}
	clock, err := sumComponents(timePart, isoTimeComponents, true)
	if err != nil {
		return 0, err
	}
	if datePart == "" && timePart == "" {
		return 0, errors.New("no component")
	}
	return addDurations(date, clock)
}

// sumComponents adds up components such as "1H30M", each designator at most
// once and in the order of comps. With fractionalSeconds, the S component may
// have a fraction.
func sumComponents(s string, comps []isoComponent, fractionalSeconds bool) (time.Duration, error) {
	var total time.Duration
	for s != "" {
		n := leadingDigits(s)
		whole, frac := s[:n], ""
		if n < len(s) && s[n] == '.' {
			f := leadingDigits(s[n+1:])
			frac = s[n+1 : n+1+f]
			if frac == "" {
				return 0, errors.New("a decimal point without digits after it")
			}
			n += 1 + f
		}
		if whole == "" || n == len(s) {
			return 0, errors.New("a component without a number or a designator")
		}
		i := indexOfDesignator(comps, s[n])
		if i < 0 {
			return 0, fmt.Errorf("designator %q out of place", s[n])
		}
		if frac != "" && !(fractionalSeconds && comps[i].designator == 'S') {
			return 0, errors.New("a fraction on a component other than seconds")
		}
		d, err := scaleDigits(whole, frac, comps[i].unit)
		if err != nil {
			return 0, err
		}
		if total, err = addDurations(total, d); err != nil {
			return 0, err
		}
		comps = comps[i+1:]
		s = s[n+1:]
	}
	return total, nil
}

func indexOfDesignator(comps []isoComponent, c byte) int {
	for i, comp := range comps {
		if comp.designator == c {
			return i
		}
	}
	return -1
}

// parseTimeSpan parses .NET TimeSpan text without its sign:
// [d.]hh:mm[:ss[.fffffff]] or d.
func parseTimeSpan(s string) (time.Duration, error) {
	if n := leadingDigits(s); n > 0 && n == len(s) {
		return scaleDigits(s, "", isoDay)
	}
	clock := s
	var days time.Duration
	if dayText, rest, ok := strings.Cut(s, "."); ok && !strings.Contains(dayText, ":") {
		if dayText == "" || leadingDigits(dayText) != len(dayText) {
			return 0, errors.New("days are not a number")
		}
		d, err := scaleDigits(dayText, "", isoDay)
		if err != nil {
			return 0, err
		}
		days, clock = d, rest
	}
	parts := strings.Split(clock, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, errors.New("not hh:mm or hh:mm:ss")
	}
	var frac string
	if len(parts) == 3 {
		var hasFrac bool
		parts[2], frac, hasFrac = strings.Cut(parts[2], ".")
		if hasFrac && (frac == "" || len(frac) > 7 || leadingDigits(frac) != len(frac)) {
			return 0, errors.New("the fraction of a second is not 1 to 7 digits")
		}
	}
	units := []time.Duration{time.Hour, time.Minute, time.Second}
	limits := []int{23, 59, 59}
	total := days
	for i, p := range parts {
		v, ok := smallNumber(p, limits[i])
		if !ok {
			return 0, errors.New("a clock field out of range")
		}
		var err error
		if total, err = addDurations(total, time.Duration(v)*units[i]); err != nil {
			return 0, err
		}
	}
	fraction, err := scaleDigits("0", frac, time.Second)
	if err != nil {
		return 0, err
	}
	return addDurations(total, fraction)
}

// smallNumber parses one or two digits no greater than limit.
func smallNumber(s string, limit int) (int, bool) {
	if len(s) < 1 || len(s) > 2 || leadingDigits(s) != len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s) {
		v = v*10 + int(c-'0')
	}
	return v, v <= limit
}

// leadingDigits returns how many ASCII digits s starts with.
func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// scaleDigits returns whole.frac × unit, truncated to nanoseconds. whole and
// frac are strings of ASCII digits.
func scaleDigits(whole, frac string, unit time.Duration) (time.Duration, error) {
	var n int64
	for _, c := range []byte(whole) {
		digit := int64(c - '0')
		if n > (math.MaxInt64-digit)/10 {
			return 0, errDurationOverflow
		}
		n = n*10 + digit
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, errDurationOverflow
	}
	var fraction time.Duration
	step := unit
	for _, c := range []byte(frac) {
		if step /= 10; step == 0 {
			break
		}
		fraction += time.Duration(c-'0') * step
	}
	return addDurations(time.Duration(n)*unit, fraction)
}

// addDurations adds two non-negative durations, reporting overflow.
func addDurations(a, b time.Duration) (time.Duration, error) {
	if a > math.MaxInt64-b {
		return 0, errDurationOverflow
	}
	return a + b, nil
}
