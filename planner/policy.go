package planner

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// This file holds the scheduling policies that refine the recurrence's
// instants (extensions to the 2016-03-01 API): excluded calendars with what
// happens on an excluded day, business days of the month, and the flexible
// window each occurrence may run within.
//
// Excluded days apply to the recurrence's instants by their local date in
// its time zone. Skip drops an occurrence on a held date. NextBusinessDay
// and PreviousBusinessDay move it to the same wall-clock time on the
// nearest business day (Monday to Friday, held by no excluded calendar)
// after or before; occurrences that land on the same instant are one, and
// a moved occurrence before the anchor or after the end time is dropped.
// Moving needs calendar days: with frequency minute or hour (which
// validation rejects) excluded occurrences are skipped.

// ErrCalendarMissing says that a recurrence names an excluded calendar that
// was not given to NewSchedule.
var ErrCalendarMissing = errors.New("excluded calendar not found")

// businessSearchDays bounds the search for a business day (and for the end
// of a run of held days): longer than the longest range a calendar may
// hold (3 years). Calendars that hold more than this many days in a row
// have no business day near them, and an occurrence that would move there
// is dropped.
const businessSearchDays = 1200

// excludedScanLimit bounds the runs of held days skipped, and the
// occurrences looked at, in search of one that runs. A schedule with none
// within that many has none (validation rejects it: "schedule never fires").
const excludedScanLimit = 5000

// policy is what a Schedule keeps of the scheduling policies; only jobs
// that name one have it.
type policy struct {
	cals         []*Calendar // the excluded calendars
	onExcluded   contracts.ExcludedDayAction
	window       int64 // flexible window, seconds; 0: none
	businessDays []int // monthlyBusinessDays
}

// compilePolicy reads the policies of recurrence r into s.policy, leaving it
// nil when r names none.
func (s *Schedule) compilePolicy(r *contracts.Recurrence, strict bool, cals []*Calendar) error {
	var pol policy
	if r.FlexibleWindow != "" {
		d, err := contracts.ParseDuration(r.FlexibleWindow)
		if err != nil {
			return fmt.Errorf("flexibleWindow: %w", err)
		}
		pol.window = max(int64(d/time.Second), 0)
	}
	for _, name := range r.ExcludedCalendars {
		i := slices.IndexFunc(cals, func(c *Calendar) bool { return c != nil && strings.EqualFold(c.name, name) })
		switch {
		case i >= 0:
			pol.cals = append(pol.cals, cals[i])
		case strict:
			return fmt.Errorf("excludedCalendars names calendar %s: %w", contracts.QuoteName(name), ErrCalendarMissing)
		}
	}
	pol.onExcluded = r.OnExcludedDay
	if pol.onExcluded == "" || r.Frequency == contracts.FrequencyMinute || r.Frequency == contracts.FrequencyHour {
		pol.onExcluded = contracts.ExcludedDaySkip
	}
	if r.Schedule != nil && r.Frequency == contracts.FrequencyMonth {
		pol.businessDays = slices.Clone(r.Schedule.MonthlyBusinessDays)
	}
	if pol.window > 0 || len(pol.cals) > 0 || len(pol.businessDays) > 0 {
		s.policy = &pol
	}
	return nil
}

// Window returns the flexible window within which each occurrence may run
// after its instant, or 0 when there is none.
func (s *Schedule) Window() time.Duration {
	if s.policy == nil {
		return 0
	}
	return time.Duration(s.policy.window) * time.Second
}

// Due returns when the occurrence at at of the job jobKey runs: at plus an
// offset of whole seconds in [0, Window()), the same for the same job and
// instant, spread evenly over many jobs; at itself when there is no window.
func (s *Schedule) Due(jobKey string, at time.Time) time.Time {
	if s.policy == nil || s.policy.window <= 0 {
		return at
	}
	return at.Add(time.Duration(windowOffset(jobKey, at.Unix(), s.policy.window)) * time.Second)
}

// windowOffset maps (key, at) to [0, window) seconds: FNV-1a 64 over the
// key and the instant, a finalizing mix (FNV's high bits change little for
// inputs that differ in their last bytes), then multiply-shift to the range,
// which keeps it even without the bias of a modulo.
func windowOffset(key string, at int64, window int64) int64 {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for i := range len(key) {
		h ^= uint64(key[i])
		h *= prime64
	}
	for i := range 8 {
		h ^= uint64(byte(at >> (8 * i)))
		h *= prime64
	}
	// The finalizer of SplitMix64.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	hi, _ := bits.Mul64(h, uint64(window))
	return int64(hi)
}

// excludedOn returns the first excluded calendar that holds local day
// number days, or nil.
func (s *Schedule) excludedOn(days int64) *Calendar {
	if s.policy == nil || len(s.policy.cals) == 0 {
		return nil
	}
	y, m, d := civilFromDays(days)
	first := days - int64(d) + 1
	for _, c := range s.policy.cals {
		if c.monthMask(y, m, first)&(1<<uint(d)) != 0 {
			return c
		}
	}
	return nil
}

// excludedAt is excludedOn for the local date of an instant.
func (s *Schedule) excludedAt(unix int64) *Calendar {
	if s.policy == nil || len(s.policy.cals) == 0 {
		return nil
	}
	return s.excludedOn(s.localDays(unix))
}

// isBusiness reports whether day number days is a Monday to Friday that no
// excluded calendar holds.
func (s *Schedule) isBusiness(days int64) bool {
	wd := weekdayOfDays(days)
	return wd != time.Saturday && wd != time.Sunday && s.excludedOn(days) == nil
}

// nextBusiness returns the first business day after days.
func (s *Schedule) nextBusiness(days int64) (int64, bool) {
	for d := days + 1; d <= days+businessSearchDays; d++ {
		if s.isBusiness(d) {
			return d, true
		}
	}
	return 0, false
}

// prevBusiness returns the last business day before days.
func (s *Schedule) prevBusiness(days int64) (int64, bool) {
	for d := days - 1; d >= days-businessSearchDays; d-- {
		if s.isBusiness(d) {
			return d, true
		}
	}
	return 0, false
}

// businessDaysMask returns the days (bit d) of month y-m, which starts on
// day number first, that monthlyBusinessDays names: the nth business day
// from the start (n > 0) or from the end (n < 0).
func (s *Schedule) businessDaysMask(y int, m time.Month, first int64) uint64 {
	var held uint64
	for _, c := range s.policy.cals {
		held |= c.monthMask(y, m, first)
	}
	var business [31]int8
	n := 0
	wd := weekdayOfDays(first)
	for d := 1; d <= daysIn(y, m); d++ {
		if wd != time.Saturday && wd != time.Sunday && held&(1<<uint(d)) == 0 {
			business[n] = int8(d)
			n++
		}
		wd = (wd + 1) % 7
	}
	var mask uint64
	for _, k := range s.policy.businessDays {
		switch {
		case k > 0 && k <= n:
			mask |= 1 << uint(business[k-1])
		case k < 0 && -k <= n:
			mask |= 1 << uint(business[n+k])
		}
	}
	return mask
}

// endOfDay returns the last second of local day number days.
func (s *Schedule) endOfDay(days int64) int64 { return s.wallClock(days+1, 0) - 1 }

// nextExcluding is Next for a schedule with excluded calendars.
func (s *Schedule) nextExcluding(after int64) (int64, bool) {
	switch s.policy.onExcluded {
	case contracts.ExcludedDayNextBusiness:
		return s.nextMovedLater(after)
	case contracts.ExcludedDayPrevBusiness:
		return s.nextMovedEarlier(after)
	}
	return s.nextSkipping(after)
}

// nextSkipping: the first occurrence after after on a date no excluded
// calendar holds. It jumps over each run of held days at once.
func (s *Schedule) nextSkipping(after int64) (int64, bool) {
	t := after
	for range excludedScanLimit {
		o, ok := s.nextBase(t)
		if !ok || (s.hasEnd && o > s.end) {
			return 0, false
		}
		days := s.localDays(o)
		if s.excludedOn(days) == nil {
			return o, true
		}
		d := days + 1
		for i := 0; i < businessSearchDays && s.excludedOn(d) != nil; i++ {
			d++
		}
		t = max(s.endOfDay(d-1), o)
	}
	return 0, false
}

// nextMovedLater: NextBusinessDay. A moved occurrence runs later than its
// instant, so occurrences before after can move past it: those on the held
// days of the run of non-business days just before after's date. The
// search starts at the first of them and ends at the first occurrence that
// stays where it is, or at one no earlier than the best found.
func (s *Schedule) nextMovedLater(after int64) (int64, bool) {
	afterDays := s.localDays(after)
	from := afterDays + 1 // the first held day from which to search
	if s.excludedOn(afterDays) != nil {
		from = afterDays
	}
	for d, i := afterDays-1, 0; i < businessSearchDays; d, i = d-1, i+1 {
		wd := weekdayOfDays(d)
		if s.excludedOn(d) != nil {
			from = d
		} else if wd != time.Saturday && wd != time.Sunday {
			break // a business day
		}
	}
	t := after
	if from <= afterDays {
		t = min(s.wallClock(from, 0)-1, after)
	}
	var (
		best, prevDay, prevB int64
		found                bool
	)
	for range excludedScanLimit {
		o, ok := s.nextBase(t)
		if !ok || (found && o >= best) || (s.hasEnd && o > s.end) {
			break
		}
		t = o
		days := s.localDays(o)
		if s.excludedOn(days) == nil {
			if o > after {
				return o, true // o < best: nothing later moves before it
			}
			t = max(o, min(s.endOfDay(days), after))
			continue
		}
		b := prevB
		if !(prevDay < days && days < prevB) { // not in the run already seen
			if b, ok = s.nextBusiness(days); !ok {
				t = max(o, s.endOfDay(days))
				continue
			}
		}
		prevDay, prevB = days, b
		if s.endOfDay(b) <= after {
			t = max(o, s.endOfDay(days)) // the whole day moves to or before after
			continue
		}
		e := s.wallClock(b, s.nominalTime(o, days))
		if e <= after || (s.hasEnd && e > s.end) {
			continue
		}
		if !found || e < best {
			best, found = e, true
		}
		if !s.transitionOn(days) && !s.transitionOn(b) {
			// Later times of this day move to later times of b. A day
			// after the anchor's has every time of the schedule, so the
			// held days after it, which move to b too, move nothing
			// earlier either. (Days in between that no calendar holds
			// keep their occurrences.)
			last := days
			if days != s.aDays {
				for last+1 < b && s.excludedOn(last+1) != nil {
					last++
				}
			}
			t = max(o, s.endOfDay(last))
		}
	}
	return best, found
}

// nextMovedEarlier: PreviousBusinessDay. A moved occurrence runs earlier
// than its instant, so the search goes on past the best found until the
// first business day after it: no occurrence from then on moves before it.
func (s *Schedule) nextMovedEarlier(after int64) (int64, bool) {
	t := after
	var best, limitDay int64
	found := false
	for range excludedScanLimit {
		o, ok := s.nextBase(t)
		if !ok || (s.hasEnd && o > s.end) {
			break
		}
		days := s.localDays(o)
		if found && days >= limitDay {
			break
		}
		t = o
		e := o
		if s.excludedOn(days) != nil {
			b, ok := s.prevBusiness(days)
			if !ok || s.endOfDay(b) <= after {
				t = max(o, s.endOfDay(days)) // the whole day moves to or before after
				continue
			}
			e = s.wallClock(b, s.nominalTime(o, days))
			if e < s.anchor || e <= after {
				continue
			}
		}
		if !found || e < best {
			best, found = e, true
			limitDay = math.MaxInt64
			if d, ok := s.nextBusiness(s.localDays(best)); ok {
				limitDay = d
			}
		}
	}
	return best, found
}

// transitionOn reports whether the zone changes its offset on local day
// number days, its midnight included (America/Santiago skips 00:00–01:00).
func (s *Schedule) transitionOn(days int64) bool {
	if s.loc == time.UTC {
		return false
	}
	y, m, d := civilFromDays(days)
	start := contracts.WallClock(s.loc, y, m, d, 0, 0, 0)
	return !isMidnight(start) || transitionWithin(s.loc, start.Unix())
}

// nominalTime returns the wall-clock time of day, in seconds, that
// occurrence o on local day number days was scheduled at: its clock, or,
// when a daylight-saving gap shifted it, the time the schedule asked for.
// A moved occurrence keeps that time on its new day.
func (s *Schedule) nominalTime(o int64, days int64) int64 {
	h, m, sec := time.Unix(o, 0).In(s.loc).Clock()
	clock := int64(h*3600 + m*60 + sec)
	if !s.transitionOn(days) {
		return clock
	}
	candidates := s.times
	if s.kind == kindCalendarGrid {
		candidates = []int64{int64(s.aHour*3600 + s.aMin*60 + s.aSecond)}
	}
	for _, tod := range candidates {
		if s.wallClock(days, tod) == o {
			return tod
		}
	}
	return clock
}
