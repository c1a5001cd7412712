package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
)

// skuQuota is a plan's default quota: the most jobs in a collection and the
// shortest gap between two occurrences of a job.
type skuQuota struct {
	maxJobs       int
	maxRecurrence time.Duration
	// recurrence is maxRecurrence as the API shows it.
	recurrence contracts.JobMaxRecurrence
}

func minutes(n int) contracts.JobMaxRecurrence {
	return contracts.JobMaxRecurrence{Frequency: contracts.FrequencyMinute, Interval: &n}
}

func hours(n int) contracts.JobMaxRecurrence {
	return contracts.JobMaxRecurrence{Frequency: contracts.FrequencyHour, Interval: &n}
}

// skuDefaults are the original service's plans (Free 5 jobs, hourly;
// Standard and P10Premium 50, every minute; P20Premium 1,000, every minute).
var skuDefaults = map[contracts.SkuName]skuQuota{
	contracts.SkuFree:       {5, time.Hour, hours(1)},
	contracts.SkuStandard:   {50, time.Minute, minutes(1)},
	contracts.SkuP10Premium: {50, time.Minute, minutes(1)},
	contracts.SkuP20Premium: {1000, time.Minute, minutes(1)},
}

// effectiveQuota returns the collection's quota with its plan's defaults
// filling what it does not set.
func effectiveQuota(p contracts.JobCollectionProperties) (maxJobs int, maxRecurrence time.Duration) {
	sku := contracts.SkuStandard
	if p.Sku != nil && p.Sku.Name != "" {
		sku = p.Sku.Name
	}
	d := skuDefaults[sku]
	maxJobs, maxRecurrence = d.maxJobs, d.maxRecurrence
	if q := p.Quota; q != nil {
		if q.MaxJobCount != nil {
			maxJobs = *q.MaxJobCount
		}
		if q.MaxRecurrence != nil {
			maxRecurrence = recurrenceSpan(q.MaxRecurrence.Frequency, intOr(q.MaxRecurrence.Interval, 1))
		}
	}
	return maxJobs, maxRecurrence
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// recurrenceSpan is the nominal length of interval frequency units; a month
// counts as its shortest (28 days) so that a monthly job meets a monthly
// quota.
func recurrenceSpan(f contracts.Frequency, interval int) time.Duration {
	unit := map[contracts.Frequency]time.Duration{
		contracts.FrequencyMinute: time.Minute, contracts.FrequencyHour: time.Hour,
		contracts.FrequencyDay: 24 * time.Hour, contracts.FrequencyWeek: 7 * 24 * time.Hour,
		contracts.FrequencyMonth: 28 * 24 * time.Hour, contracts.FrequencyYear: 365 * 24 * time.Hour,
	}[f]
	return time.Duration(interval) * unit
}

// gapSample is how many occurrences are looked at to find a job's shortest
// gap: enough to cover every period shape of a schedule.
const gapSample = 2000

// shortestGap returns the shortest wall-clock gap between two consecutive
// occurrences among the first gapSample of the job's schedule, after its
// first; the largest duration when there is none.
func shortestGap(p *contracts.JobProperties, anchor time.Time) (time.Duration, error) {
	shortest := time.Duration(1<<63 - 1)
	// Without the calendars: what they exclude only makes gaps longer,
	// save a move to the previous business day, which the quota does not
	// count.
	s, _, err := planner.NewStoredSchedule(p, anchor)
	if err != nil {
		return shortest, err
	}
	first, ok := s.First()
	if !ok {
		return shortest, nil
	}
	prev, ok := s.Next(first)
	if !ok || s.Count() == 1 {
		return shortest, nil
	}
	loc := s.Location()
	for range gapSample {
		next, ok := s.Next(prev)
		if !ok {
			break
		}
		_, before := prev.In(loc).Zone()
		_, after := next.In(loc).Zone()
		shortest = min(shortest, next.Sub(prev)+time.Duration(after-before)*time.Second)
		prev = next
	}
	return shortest, nil
}

// maxZoneShift bounds how far a change of a zone's offset moves a
// wall-clock gap (daylight saving moves it by an hour, a few zones by two).
const maxZoneShift = 2 * time.Hour

// shortestGapAtLeast returns a bound under the shortest gap of a recurrence
// without a schedule, which repeats every interval units (a month at least
// 28 days, a year 365) less a change of zone offset; 0 for one with a
// schedule, whose hours, minutes and days can bring occurrences closer.
// It spares checkRecurrenceQuota computing occurrences for most jobs.
func shortestGapAtLeast(r *contracts.Recurrence) time.Duration {
	if s := r.Schedule; s != nil && (s.WeekDays != nil || s.Hours != nil || s.Minutes != nil || s.MonthDays != nil || s.MonthlyOccurrences != nil) {
		return 0
	}
	return recurrenceSpan(r.Frequency, r.IntervalOrDefault()) - maxZoneShift
}

// checkRecurrenceQuota rejects a job whose shortest gap between two
// consecutive occurrences is shorter than the collection's maxRecurrence.
// Gaps are wall-clock time in the job's zone, so a daily job is a day apart
// across a daylight-saving change; the immediate first run of a job without
// a start time does not count.
func checkRecurrenceQuota(p *contracts.JobProperties, anchor time.Time, maxRecurrence time.Duration) *apiError {
	if p.Recurrence == nil || maxRecurrence <= 0 {
		return nil
	}
	if shortestGapAtLeast(p.Recurrence) >= maxRecurrence {
		return nil
	}
	shortest, err := shortestGap(p, anchor)
	if err != nil {
		return newError(http.StatusBadRequest, codeBadRequest, err.Error())
	}
	if shortest < maxRecurrence {
		return newError(http.StatusConflict, codeQuotaExceeded, fmt.Sprintf(
			"the job recurs every %s at its most frequent, more often than the job collection allows (quota.maxRecurrence: every %s)",
			shortest, maxRecurrence))
	}
	return nil
}
