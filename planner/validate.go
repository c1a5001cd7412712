package planner

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// maxInterval is the largest interval per frequency (recurrence.md,
// "Validation limits"; the original service's 18 months, 78 weeks, 548 days).
var maxInterval = map[contracts.Frequency]int{
	contracts.FrequencyMinute: 1000,
	contracts.FrequencyHour:   1000,
	contracts.FrequencyDay:    548,
	contracts.FrequencyWeek:   78,
	contracts.FrequencyMonth:  18,
	contracts.FrequencyYear:   1,
}

// Limits of the scheduling policies.
const (
	// MaxExcludedCalendars is the most calendars a recurrence excludes.
	MaxExcludedCalendars = 10
	// MaxPauseAfterFaults is the largest pauseAfterFaults.
	MaxPauseAfterFaults = 1000
	// MaxCatchUpWindow is the longest catchUpWindow: 366 days.
	MaxCatchUpWindow = 366 * 24 * time.Hour
	// maxBusinessDay is the largest monthlyBusinessDays position: no month
	// has more than 23 weekdays.
	maxBusinessDay = 23
)

// periodFloor is the shortest length of one frequency unit, the bound of a
// flexible window (times the interval): a month counts as 28 days, a year
// as 365, and a day as 24 hours (a window may reach past the next
// occurrence by the hour a daylight-saving change takes from a day; it
// never ends a period late by more).
var periodFloor = map[contracts.Frequency]time.Duration{
	contracts.FrequencyMinute: time.Minute,
	contracts.FrequencyHour:   time.Hour,
	contracts.FrequencyDay:    24 * time.Hour,
	contracts.FrequencyWeek:   7 * 24 * time.Hour,
	contracts.FrequencyMonth:  28 * 24 * time.Hour,
	contracts.FrequencyYear:   365 * 24 * time.Hour,
}

// ParseJob decodes a job definition (the ARM envelope or the bare properties
// object) and validates it as of now, the time it is created or updated. It
// returns every violation together, each naming the JSON path of its field.
// It validates without the collection's calendars: see
// ParseJobWithCalendars.
func ParseJob(data []byte, now time.Time) (contracts.JobProperties, contracts.FieldErrors) {
	return ParseJobWithCalendars(data, now)
}

// ParseJobWithCalendars is ParseJob with the calendars of the job's
// collection, so that a schedule that its excluded calendars keep from
// ever running is rejected. Excluded calendars that cals lacks are not
// reported (the API checks that they exist) and exclude nothing.
func ParseJobWithCalendars(data []byte, now time.Time, cals ...*Calendar) (contracts.JobProperties, contracts.FieldErrors) {
	job, errs := contracts.DecodeJob(data)
	errs = append(errs, ValidateJobWithCalendars(&job.Properties, job.Prefix, now, errs, cals...)...)
	return job.Properties, errs
}

// ValidateJob checks a decoded job as of now. Paths start with prefix
// ("properties." for the ARM envelope). Fields that already have an error in
// known (from decoding) are not reported again.
func ValidateJob(p *contracts.JobProperties, prefix string, now time.Time, known contracts.FieldErrors) contracts.FieldErrors {
	return ValidateJobWithCalendars(p, prefix, now, known)
}

// ValidateJobWithCalendars is ValidateJob with the calendars of the job's
// collection (see ParseJobWithCalendars).
func ValidateJobWithCalendars(p *contracts.JobProperties, prefix string, now time.Time, known contracts.FieldErrors, cals ...*Calendar) contracts.FieldErrors {
	errs := append(contracts.FieldErrors(nil), known...)
	if p.State != "" && p.State != contracts.JobStateEnabled && p.State != contracts.JobStateDisabled {
		errs.Add(prefix+"state", "%s cannot be set; a job's state can be set to Enabled or Disabled (Completed and Faulted are set by the scheduler)", p.State)
	}
	contracts.ValidateAction(p.Action, prefix+"action", false, &errs)
	validateJobPolicies(p, prefix, &errs)
	if p.Recurrence != nil {
		validateRecurrence(p, prefix+"recurrence", now, cals, &errs)
	}
	return errs[len(known):]
}

// validateJobPolicies checks catchUp, catchUpWindow, overlap and
// pauseAfterFaults: they concern the occurrences of a recurring job.
func validateJobPolicies(p *contracts.JobProperties, prefix string, errs *contracts.FieldErrors) {
	if p.Recurrence == nil {
		const rule = "only for a job with a recurrence; a job that runs once has no other occurrence"
		if p.CatchUp != "" {
			errs.Add(prefix+"catchUp", "%s", rule)
		}
		if p.CatchUpWindow != "" {
			errs.Add(prefix+"catchUpWindow", "%s", rule)
		}
		if p.Overlap != "" {
			errs.Add(prefix+"overlap", "%s", rule)
		}
		if p.PauseAfterFaults != nil {
			errs.Add(prefix+"pauseAfterFaults", "%s", rule)
		}
		return
	}
	if p.CatchUpWindow != "" {
		d, err := contracts.ParseDuration(p.CatchUpWindow)
		switch {
		case p.CatchUp != contracts.CatchUpAll:
			errs.Add(prefix+"catchUpWindow", "only with catchUp %s (it bounds how far back that policy reaches); this job's catchUp is %s",
				contracts.CatchUpAll, cmp.Or(p.CatchUp, contracts.CatchUpEarliest))
		case err != nil:
			errs.Add(prefix+"catchUpWindow", "%v", err)
		case d < time.Second:
			errs.Add(prefix+"catchUpWindow", "%q is shorter than the minimum of 1 second (PT1S)", p.CatchUpWindow)
		case d > MaxCatchUpWindow:
			errs.Add(prefix+"catchUpWindow", "%q is longer than the maximum of 366 days (P366D)", p.CatchUpWindow)
		}
	}
	if n := p.PauseAfterFaults; n != nil && (*n < 1 || *n > MaxPauseAfterFaults) {
		errs.Add(prefix+"pauseAfterFaults", "must be between 1 and %d consecutive faulted occurrences, not %d", MaxPauseAfterFaults, *n)
	}
}

// validateRecurrencePolicies checks flexibleWindow, excludedCalendars and
// onExcludedDay.
func validateRecurrencePolicies(r *contracts.Recurrence, path string, errs *contracts.FieldErrors) {
	if r.FlexibleWindow != "" {
		d, err := contracts.ParseDuration(r.FlexibleWindow)
		floor, known := periodFloor[r.Frequency]
		period := time.Duration(r.IntervalOrDefault()) * floor
		switch {
		case err != nil:
			errs.Add(path+".flexibleWindow", "%v", err)
		case d <= 0:
			errs.Add(path+".flexibleWindow", "%q must be longer than zero; leave it out for no window", r.FlexibleWindow)
		case d%time.Second != 0:
			errs.Add(path+".flexibleWindow", "%q must be a whole number of seconds", r.FlexibleWindow)
		case known && r.IntervalOrDefault() >= 1 && d > period:
			errs.Add(path+".flexibleWindow", "%q is longer than the recurrence's period of %s (every %s); a window is at most one period, counting a month as 28 days and a year as 365",
				r.FlexibleWindow, formatDuration(period), pluralize(r.IntervalOrDefault(), strings.ToLower(string(r.Frequency))))
		}
	}
	if len(r.ExcludedCalendars) > MaxExcludedCalendars {
		errs.Add(path+".excludedCalendars", "names %d calendars; at most %d may be excluded", len(r.ExcludedCalendars), MaxExcludedCalendars)
	}
	for i, name := range r.ExcludedCalendars {
		if err := contracts.ValidateName("calendar", name); err != nil {
			errs.Add(fmt.Sprintf("%s.excludedCalendars[%d]", path, i), "%v", err)
		}
	}
	if r.OnExcludedDay != "" {
		switch {
		case len(r.ExcludedCalendars) == 0:
			errs.Add(path+".onExcludedDay", "only with excludedCalendars: it says what happens on a date they hold")
		case r.OnExcludedDay != contracts.ExcludedDaySkip && (r.Frequency == contracts.FrequencyMinute || r.Frequency == contracts.FrequencyHour):
			errs.Add(path+".onExcludedDay", "%s moves an occurrence to another day, which needs frequency Day, Week, Month or Year (this recurrence has frequency %s); use Skip",
				r.OnExcludedDay, r.Frequency)
		}
	}
}

// formatDuration returns "28 days", "36 hours", "90 minutes" or "45 seconds".
func formatDuration(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return pluralize(int(d/(24*time.Hour)), "day")
	case d%time.Hour == 0:
		return pluralize(int(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return pluralize(int(d/time.Minute), "minute")
	}
	return pluralize(int(d/time.Second), "second")
}

// validateRecurrence applies the rules of recurrence.md and, when they hold,
// rejects a schedule that never fires.
func validateRecurrence(p *contracts.JobProperties, path string, now time.Time, cals []*Calendar, errs *contracts.FieldErrors) {
	r := p.Recurrence
	before := len(*errs)
	if r.Frequency == "" {
		errs.Add(path+".frequency", "required when recurrence is given; one of %s", contracts.EnumList(contracts.Frequencies))
	}
	if r.Interval != nil {
		limit, known := maxInterval[r.Frequency]
		switch {
		case *r.Interval < 1:
			errs.Add(path+".interval", "must be at least 1, not %d", *r.Interval)
		case known && *r.Interval > limit:
			errs.Add(path+".interval", "%d is above the limit of %d for frequency %s", *r.Interval, limit, r.Frequency)
		}
	}
	if r.Count != nil && *r.Count < 1 {
		errs.Add(path+".count", "must be at least 1, not %d", *r.Count)
	}
	if r.EndTime != nil && r.EndTime.Before(now.Truncate(time.Second)) {
		errs.Add(path+".endTime", "%s is in the past; it must not be earlier than now (%s)", formatInstant(*r.EndTime), formatInstant(now))
	}
	if r.Schedule != nil {
		validateScheduleElements(r.Schedule, r.Frequency, path+".schedule", errs)
	}
	validateRecurrencePolicies(r, path, errs)
	if errorsUnder(*errs, before, path) || errorsUnder(*errs, before, strings.TrimSuffix(path, "recurrence")+"startTime") {
		return
	}
	s, err := newSchedule(p, now, false, cals)
	if err != nil {
		errs.Add(path, "%v", err)
		return
	}
	first, ok := s.First()
	switch {
	case !ok:
		errs.Add(path, "%s", neverFiresReason(p, now, s))
	case first.After(contracts.MaxDateTime):
		errs.Add(strings.TrimSuffix(path, "recurrence")+"startTime", "the job would first run at %s, after %s, the last date-time the API can represent; give an earlier startTime",
			formatInstant(first), formatInstant(contracts.MaxDateTime))
	}
}

func validateScheduleElements(sc *contracts.Schedule, freq contracts.Frequency, path string, errs *contracts.FieldErrors) {
	checkRange := func(name string, values []int, ok func(int) bool, rule string) {
		if values == nil {
			return
		}
		if len(values) == 0 {
			errs.Add(path+"."+name, "must not be empty; give %s or leave it out", rule)
			return
		}
		var bad []string
		for _, v := range values {
			if !ok(v) {
				bad = append(bad, strconv.Itoa(v))
			}
		}
		if len(bad) > 0 {
			errs.Add(path+"."+name, "%s out of range; allowed: %s", strings.Join(bad, ", "), rule)
		}
	}
	checkRange("minutes", sc.Minutes, func(v int) bool { return v >= 0 && v <= 59 }, "minutes 0–59")
	checkRange("hours", sc.Hours, func(v int) bool { return v >= 0 && v <= 23 }, "hours 0–23")
	checkRange("monthDays", sc.MonthDays, func(v int) bool { return v != 0 && v >= -31 && v <= 31 }, "days 1–31, or -31…-1 counted from the end of the month (-1 is the last day)")

	needs := func(name string, given bool, want contracts.Frequency) {
		if given && freq != "" && freq != want {
			errs.Add(path+"."+name, "only allowed with frequency %s (this recurrence has frequency %s)", want, freq)
		}
	}
	needs("weekDays", sc.WeekDays != nil, contracts.FrequencyWeek)
	needs("monthDays", sc.MonthDays != nil, contracts.FrequencyMonth)
	needs("monthlyOccurrences", sc.MonthlyOccurrences != nil, contracts.FrequencyMonth)
	needs("monthlyBusinessDays", sc.MonthlyBusinessDays != nil, contracts.FrequencyMonth)
	checkRange("monthlyBusinessDays", sc.MonthlyBusinessDays, func(v int) bool { return v != 0 && v >= -maxBusinessDay && v <= maxBusinessDay },
		"business days 1–23, or -23…-1 counted from the end of the month (-1 is the last business day)")
	if sc.MonthlyBusinessDays != nil {
		for _, other := range []struct {
			name  string
			given bool
		}{{"monthDays", sc.MonthDays != nil}, {"monthlyOccurrences", sc.MonthlyOccurrences != nil}} {
			if other.given {
				errs.Add(path+".monthlyBusinessDays", "cannot be combined with %s; give business days or %s, not both", other.name, other.name)
			}
		}
	}
	if sc.WeekDays != nil && len(sc.WeekDays) == 0 {
		errs.Add(path+".weekDays", "must not be empty; give 1 to 7 day names or leave it out")
	}
	if sc.MonthlyOccurrences != nil && len(sc.MonthlyOccurrences) == 0 {
		errs.Add(path+".monthlyOccurrences", "must not be empty; give {day, occurrence} objects or leave it out")
	}
	for i, o := range sc.MonthlyOccurrences {
		if o.Occurrence == nil {
			continue
		}
		if n := *o.Occurrence; n == 0 || n < -5 || n > 5 {
			errs.Add(fmt.Sprintf("%s.monthlyOccurrences[%d].occurrence", path, i),
				"%d is out of range; allowed: 1–5 (the nth %s of the month), -5…-1 (counted from the end), or leave it out for every %s", n, o.Day, o.Day)
		}
	}
}

// errorsUnder reports whether errs[from:] has an error at path or below it.
func errorsUnder(errs contracts.FieldErrors, from int, path string) bool {
	for _, e := range errs[from:] {
		if e.Path == path || strings.HasPrefix(e.Path, path+".") {
			return true
		}
	}
	return false
}

// neverFiresReason explains why a valid-looking recurrence, compiled as s,
// has no occurrence.
func neverFiresReason(p *contracts.JobProperties, now time.Time, s *Schedule) string {
	r := p.Recurrence
	if s.policy != nil && len(s.policy.cals) > 0 {
		open := *p
		rr := *r
		rr.ExcludedCalendars, rr.OnExcludedDay = nil, ""
		open.Recurrence = &rr
		if plain, err := NewSchedule(&open, now); err == nil {
			if _, ok := plain.First(); ok {
				var names []string
				for _, c := range s.policy.cals {
					names = append(names, contracts.QuoteName(c.name))
				}
				subject := "the excluded calendar " + names[0] + " holds"
				if len(names) > 1 {
					subject = "the excluded calendars " + joinAnd(names) + " hold"
				}
				tail := ""
				if s.policy.onExcluded != contracts.ExcludedDaySkip {
					tail = ", and none can move to a business day between its start and its end"
				}
				return fmt.Sprintf("schedule never fires: %s the date of every occurrence%s", subject, tail)
			}
		}
	}
	if r.EndTime != nil {
		open := *p
		rr := *r
		rr.EndTime = nil
		open.Recurrence = &rr
		if s, err := NewSchedule(&open, now); err == nil {
			if first, ok := s.First(); ok {
				return fmt.Sprintf("schedule never fires: its first occurrence would be %s, after endTime %s",
					formatInstant(first), formatInstant(*r.EndTime))
			}
		}
	}
	return "schedule never fires: no date in any period matches its schedule (for example monthDays [30] every 12 months from February); change the days, the interval or the start time"
}

func formatInstant(t time.Time) string { return t.UTC().Format(time.RFC3339) }
