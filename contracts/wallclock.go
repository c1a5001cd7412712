package contracts

import "time"

// WallClock returns the instant that the wall-clock time y-mo-d h:mi:s denotes
// in loc, by the scheduler's daylight-saving rules:
//
//   - a wall time that does not exist (clocks spring forward over it) is
//     shifted forward by the length of the gap: 02:30 on the day New York
//     skips from 02:00 to 03:00 is 03:30 EDT;
//   - a wall time that occurs twice (clocks fall back) is the first, earlier
//     instant.
//
// time.Date leaves both cases unspecified, which is why this exists. The date
// must be a real calendar date; the result is in loc.
func WallClock(loc *time.Location, y int, mo time.Month, d, h, mi, s int) time.Time {
	asUTC := time.Date(y, mo, d, h, mi, s, 0, time.UTC).Unix()
	if loc == time.UTC {
		return time.Unix(asUTC, 0).UTC()
	}
	// Real zones change their offset at most once within two days, so the
	// offsets a day before and a day after are the only candidates.
	offBefore := offsetAt(loc, asUTC-86400)
	offAfter := offsetAt(loc, asUTC+86400)
	first := asUTC - int64(offBefore)
	if offBefore == offAfter {
		if offsetAt(loc, first) == offBefore {
			return time.Unix(first, 0).In(loc)
		}
		// Two changes within two days: let the standard library decide.
		return time.Date(y, mo, d, h, mi, s, 0, loc)
	}
	second := asUTC - int64(offAfter)
	firstOK := offsetAt(loc, first) == offBefore
	secondOK := offsetAt(loc, second) == offAfter
	switch {
	case firstOK && secondOK: // fall back: the wall time occurs twice
		return time.Unix(min(first, second), 0).In(loc)
	case secondOK:
		return time.Unix(second, 0).In(loc)
	default: // firstOK, or a gap: the old offset shifts it forward by the gap
		return time.Unix(first, 0).In(loc)
	}
}

func offsetAt(loc *time.Location, unix int64) int {
	_, off := time.Unix(unix, 0).In(loc).Zone()
	return off
}
