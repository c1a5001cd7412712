package contracts

import (
	"fmt"
	"time"
)

// MaxDateTime is the last instant a date-time of the API can be: the end
// of the year 9999 in UTC. JSON encodes a time.Time with a four-digit
// year, and no later instant.
var MaxDateTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// ParseDateTime parses an ISO 8601 date-time as the API accepts it:
//
//   - a date alone, 2012-11-04, meaning 00:00 that day;
//   - a date and time with or without seconds, 2012-08-04T00:00 or
//     2013-01-09T09:30:00, with any fraction of a second dropped;
//   - an optional offset: Z, ±hh:mm, ±hhmm or ±hh.
//
// The letters T and Z may be lower case. The year is 0001 to 9999, and the
// date and time must exist on the calendar and the clock (no 2023-02-29, no
// 24:00).
//
// A value with an offset is that instant, in a fixed zone of that offset (UTC
// for a zero offset). A value without one is a wall-clock time in loc,
// resolved with WallClock; nil loc means UTC. The result has whole seconds.
func ParseDateTime(s string, loc *time.Location) (time.Time, error) {
	t, ok := parseDateTime(s, loc)
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not an ISO 8601 date-time such as 2026-01-02T15:04:05Z", s)
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, fmt.Errorf("%q is outside the years 0001 to 9999 in UTC", s)
	}
	return t, nil
}

// dateTimeScanner reads a date-time from left to right.
type dateTimeScanner struct {
	s string
	i int
}

// number reads exactly n digits.
func (p *dateTimeScanner) number(n int) (int, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(p.s[p.i : p.i+n]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

// accept consumes the next byte if it is one of chars.
func (p *dateTimeScanner) accept(chars string) (byte, bool) {
	if p.i < len(p.s) {
		for _, c := range []byte(chars) {
			if p.s[p.i] == c {
				p.i++
				return c, true
			}
		}
	}
	return 0, false
}

func (p *dateTimeScanner) done() bool { return p.i == len(p.s) }

// field reads n digits no greater than limit after the separator sep ("" for
// none).
func (p *dateTimeScanner) field(sep string, n, limit int) (int, bool) {
	if sep != "" {
		if _, ok := p.accept(sep); !ok {
			return 0, false
		}
	}
	v, ok := p.number(n)
	return v, ok && v <= limit
}

func parseDateTime(s string, loc *time.Location) (time.Time, bool) {
	p := &dateTimeScanner{s: s}
	y, okY := p.field("", 4, 9999)
	mo, okM := p.field("-", 2, 12)
	d, okD := p.field("-", 2, 31)
	if !okY || !okM || !okD || y < 1 || mo < 1 || d < 1 || d > daysIn(y, time.Month(mo)) {
		return time.Time{}, false
	}
	var h, mi, sec int
	if !p.done() {
		var okH, okMi bool
		if _, ok := p.accept("Tt"); !ok {
			return time.Time{}, false
		}
		h, okH = p.field("", 2, 23)
		mi, okMi = p.field(":", 2, 59)
		if !okH || !okMi || !p.seconds(&sec) {
			return time.Time{}, false
		}
	}
	offset, hasOffset, ok := p.offset()
	if !ok || !p.done() {
		return time.Time{}, false
	}
	switch {
	case hasOffset && offset == 0:
		return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC), true
	case hasOffset:
		return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.FixedZone("", offset)), true
	case loc == nil:
		return time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC), true
	}
	return wholeMinuteOffset(WallClock(loc, y, time.Month(mo), d, h, mi, sec)), true
}

// seconds reads the optional :ss and fraction, which is dropped.
func (p *dateTimeScanner) seconds(sec *int) bool {
	if p.done() || p.s[p.i] != ':' {
		return true
	}
	var ok bool
	if *sec, ok = p.field(":", 2, 59); !ok {
		return false
	}
	if _, frac := p.accept("."); frac {
		start := p.i
		p.i += leadingDigits(p.s[p.i:])
		return p.i > start
	}
	return true
}

// offset reads the optional Z, ±hh:mm, ±hhmm or ±hh; ok is false when it is
// malformed.
func (p *dateTimeScanner) offset() (seconds int, given, ok bool) {
	if _, z := p.accept("Zz"); z {
		return 0, true, true
	}
	sign, signed := p.accept("+-")
	if !signed {
		return 0, false, true
	}
	h, okH := p.field("", 2, 23)
	if !okH {
		return 0, true, false
	}
	var m int
	if !p.done() {
		sep := ""
		if p.s[p.i] == ':' {
			sep = ":"
		}
		var okM bool
		if m, okM = p.field(sep, 2, 59); !okM {
			return 0, true, false
		}
	}
	seconds = h*3600 + m*60
	if sign == '-' {
		seconds = -seconds
	}
	return seconds, true, true
}

// daysIn returns the number of days of month mo in year y.
func daysIn(y int, mo time.Month) int {
	return time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// wholeMinuteOffset returns t in UTC when its zone's offset has seconds, as
// old local mean times do (New York before 1883 was −4:56:02). JSON output
// writes offsets in whole minutes, so such a time would not read back as the
// same instant.
func wholeMinuteOffset(t time.Time) time.Time {
	if _, off := t.Zone(); off%60 != 0 {
		return t.UTC()
	}
	return t
}
