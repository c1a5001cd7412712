package planner

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Preview returns the first n instants a job would run at if it were created
// at now: fewer when the job completes first. An invalid definition returns
// every violation (a contracts.FieldErrors) and no instants. A job that
// excludes calendars cannot be previewed without them: see
// PreviewDetailed.
func Preview(data []byte, now time.Time, n int) ([]time.Time, error) {
	now = now.Truncate(time.Second)
	p, errs := ParseJob(data, now)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := NewSchedule(&p, now)
	if err != nil {
		return nil, scheduleError(err)
	}
	return s.Upcoming(n), nil
}

// PreviewDetailed is Preview with the calendars of the job's collection,
// telling of each occurrence when it runs within its flexible window (for
// the job jobKey, as Schedule.Due), and which occurrences an excluded
// calendar skips or moves: see Schedule.UpcomingDetail.
func PreviewDetailed(data []byte, now time.Time, n int, jobKey string, cals ...*Calendar) ([]Occurrence, error) {
	now = now.Truncate(time.Second)
	p, errs := ParseJobWithCalendars(data, now, cals...)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := NewSchedule(&p, now, cals...)
	if err != nil {
		return nil, scheduleError(err)
	}
	return s.UpcomingDetail(jobKey, n), nil
}

func scheduleError(err error) error {
	path := "recurrence"
	if errors.Is(err, ErrCalendarMissing) {
		path = "recurrence.excludedCalendars"
	}
	return contracts.FieldErrors{{Path: path, Message: err.Error()}}
}

// Occurrence is one occurrence of a schedule as a preview shows it.
type Occurrence struct {
	// At is the instant the schedule has: when the occurrence runs, or,
	// when Skipped, when it would have.
	At time.Time
	// Due is when it runs within the flexible window (At when there is
	// none); zero when Skipped.
	Due time.Time
	// Skipped: an excluded calendar holds its date, and it does not run
	// (onExcludedDay Skip, or it could not move).
	Skipped bool
	// MovedFrom is the instant it was moved from, on a date an excluded
	// calendar holds, to the business day of At; zero when not moved.
	// Occurrences moved to the same instant, or to one the schedule has
	// anyway, are one, and MovedFrom names the earliest moved.
	MovedFrom time.Time
	// Calendar names the excluded calendar that holds the date of a
	// skipped or moved occurrence, and Holiday its name for that date
	// ("" when it has none).
	Calendar, Holiday string
}

// Moved reports whether the occurrence was moved from an excluded date.
func (o Occurrence) Moved() bool { return !o.MovedFrom.IsZero() }

// UpcomingDetail returns the occurrences of Upcoming(n), each with its due
// time for the job jobKey and where it was moved from, and between them
// (up to n) the occurrences that excluded calendars skip.
func (s *Schedule) UpcomingDetail(jobKey string, n int) []Occurrence {
	runs := s.Upcoming(n)
	want := n
	if s.count > 0 {
		want = min(n, s.count)
	}
	from := max(s.anchor, s.created) - 1
	if s.immediate {
		from = s.created
	}
	out := s.detail(jobKey, runs, from, len(runs) < want, n)
	if s.policy != nil && len(s.policy.cals) > 0 && s.immediate && s.kind != kindOnce && !(s.hasEnd && s.created > s.end) {
		if c := s.excludedAt(s.created); c != nil && (len(runs) < want || s.created <= runs[len(runs)-1].Unix()) {
			out = append([]Occurrence{s.skippedAt(s.created, c)}, out...)
		}
	}
	return out
}

// Detail returns runs (consecutive runs of the schedule, as the caller
// computed them from the instant from) each with its due time for the job
// jobKey and where it was moved from, and between them the occurrences
// after from that excluded calendars skip. ended says that no run follows
// the last: the skipped ones are then given up to the schedule's end (at
// most len(runs)+1 of them).
func (s *Schedule) Detail(jobKey string, from time.Time, runs []time.Time, ended bool) []Occurrence {
	return s.detail(jobKey, runs, from.Unix(), ended, len(runs)+1)
}

func (s *Schedule) detail(jobKey string, runs []time.Time, from int64, ended bool, n int) []Occurrence {
	out := make([]Occurrence, 0, len(runs))
	for _, at := range runs {
		out = append(out, Occurrence{At: at, Due: s.Due(jobKey, at)})
	}
	if s.policy == nil || len(s.policy.cals) == 0 {
		return out
	}
	for i := range out {
		s.annotateMove(&out[i])
	}
	// The occurrences skipped up to the last run, or, when the job ends
	// sooner, up to its end (at most n of those).
	limit := int64(math.MaxInt64)
	if !ended && len(runs) > 0 {
		limit = runs[len(runs)-1].Unix()
	}
	var skipped []Occurrence
	t := from
	for range excludedScanLimit {
		o, ok := s.nextBase(t)
		if !ok || o > limit || (s.hasEnd && o > s.end) || (limit == math.MaxInt64 && len(skipped) >= n) {
			break
		}
		t = o
		days := s.localDays(o)
		c := s.excludedOn(days)
		if c == nil {
			continue
		}
		if _, runs := s.movedInstant(o, days); !runs {
			skipped = append(skipped, s.skippedAt(o, c))
		}
	}
	out = append(out, skipped...)
	slices.SortStableFunc(out, func(a, b Occurrence) int { return a.At.Compare(b.At) })
	return out
}

func (s *Schedule) skippedAt(at int64, c *Calendar) Occurrence {
	holiday, _ := c.holiday(s.localDays(at))
	return Occurrence{At: unixUTC(at), Skipped: true, Calendar: c.name, Holiday: holiday}
}

// movedInstant returns where occurrence o, on held local day number days,
// runs, and whether it runs at all: false with onExcludedDay Skip, or when
// its move finds no business day or leaves the schedule's bounds.
func (s *Schedule) movedInstant(o, days int64) (int64, bool) {
	var (
		b  int64
		ok bool
	)
	switch s.policy.onExcluded {
	case contracts.ExcludedDayNextBusiness:
		b, ok = s.nextBusiness(days)
	case contracts.ExcludedDayPrevBusiness:
		b, ok = s.prevBusiness(days)
	}
	if !ok {
		return 0, false
	}
	e := s.wallClock(b, s.nominalTime(o, days))
	if e < max(s.anchor, s.created) || (s.hasEnd && e > s.end) {
		return 0, false
	}
	return e, true
}

// annotateMove fills in where a run was moved from: the earliest occurrence
// on the held days next to its date (before it for NextBusinessDay, after
// it for PreviousBusinessDay) that moves to it, if any, even when the
// schedule has the run's instant anyway.
func (s *Schedule) annotateMove(o *Occurrence) {
	if s.policy.onExcluded == contracts.ExcludedDaySkip {
		return
	}
	at := o.At.Unix()
	days := s.localDays(at)
	step := int64(-1)
	if s.policy.onExcluded == contracts.ExcludedDayPrevBusiness {
		step = 1
	}
	var run []int64
	for d, i := days+step, 0; i < businessSearchDays && !s.isBusiness(d); d, i = d+step, i+1 {
		run = append(run, d)
	}
	if step < 0 {
		slices.Reverse(run) // earliest first
	}
	tod := s.nominalTime(at, days)
	for _, d := range run {
		c := s.excludedOn(d)
		if c == nil {
			continue
		}
		from := s.wallClock(d, tod)
		if next, ok := s.nextBase(from - 1); !ok || next != from || s.localDays(from) != d {
			continue
		}
		if e, ok := s.movedInstant(from, d); ok && e == at {
			holiday, _ := c.holiday(d)
			o.MovedFrom, o.Calendar, o.Holiday = unixUTC(from), c.name, holiday
			return
		}
	}
}
