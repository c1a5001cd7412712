package planner

import (
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

// ParseJob decodes a job definition (the ARM envelope or the bare properties
// object) and validates it as of now, the time it is created or updated. It
// returns every violation together, each naming the JSON path of its field.
func ParseJob(data []byte, now time.Time) (contracts.JobProperties, contracts.FieldErrors) {
	job, errs := contracts.DecodeJob(data)
	errs = append(errs, ValidateJob(&job.Properties, job.Prefix, now, errs)...)
	return job.Properties, errs
}

// ValidateJob checks a decoded job as of now. Paths start with prefix
// ("properties." for the ARM envelope). Fields that already have an error in
// known (from decoding) are not reported again.
func ValidateJob(p *contracts.JobProperties, prefix string, now time.Time, known contracts.FieldErrors) contracts.FieldErrors {
	errs := append(contracts.FieldErrors(nil), known...)
	if p.State != "" && p.State != contracts.JobStateEnabled && p.State != contracts.JobStateDisabled {
		errs.Add(prefix+"state", "%s cannot be set; a job's state can be set to Enabled or Disabled (Completed and Faulted are set by the scheduler)", p.State)
	}
	contracts.ValidateAction(p.Action, prefix+"action", false, &errs)
	if p.Recurrence != nil {
		validateRecurrence(p, prefix+"recurrence", now, &errs)
	}
	return errs[len(known):]
}

// validateRecurrence applies the rules of recurrence.md and, when they hold,
// rejects a schedule that never fires.
func validateRecurrence(p *contracts.JobProperties, path string, now time.Time, errs *contracts.FieldErrors) {
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
	if errorsUnder(*errs, before, path) || errorsUnder(*errs, before, strings.TrimSuffix(path, "recurrence")+"startTime") {
		return
	}
	s, err := NewSchedule(p, now)
	if err != nil {
		errs.Add(path, "%v", err)
		return
	}
	first, ok := s.First()
	switch {
	case !ok:
		errs.Add(path, "%s", neverFiresReason(p, now))
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

// neverFiresReason explains why a valid-looking recurrence has no occurrence.
func neverFiresReason(p *contracts.JobProperties, now time.Time) string {
	r := p.Recurrence
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
