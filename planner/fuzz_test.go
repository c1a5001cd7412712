package planner

import (
	"testing"
	"time"
)

// FuzzParseJob feeds mutated job definitions through decoding, validation and
// the first 50 instants: nothing may panic or hang, and an accepted job's
// instants must strictly increase and honour its count. Run longer with
//
//	go test ./planner -run '^$' -fuzz FuzzParseJob -fuzztime 60s
func FuzzParseJob(f *testing.F) {
	for _, ex := range loadExamples(f) {
		f.Add([]byte(ex.Job), ex.Now.Unix())
	}
	for _, bad := range []string{
		`{}`, `[]`, `null`, `{"properties": null}`,
		`{"recurrence": {"frequency": "month", "interval": 12, "schedule": {"monthDays": [30]}}, "startTime": "2026-02-01"}`,
		`{"recurrence": {"frequency": "minute", "interval": 7, "schedule": {"minutes": [0], "hours": [5]}}, "startTime": "2026-02-01T00:03"}`,
		`{"recurrence": {"frequency": "week", "schedule": {"weekDays": "funday", "hours": [25]}}}`,
		`{"recurrence": {"frequency": "day", "timeZone": "Mars/Base", "endTime": "1999-01-01"}}`,
		`{"startTime": "2026-12-24T09:00", "recurrence": {"frequency": "day", "timeZone": "America/New_York", "flexibleWindow": "PT1H", "excludedCalendars": ["us"], "onExcludedDay": "nextBusinessDay"}}`,
		`{"recurrence": {"frequency": "month", "schedule": {"monthlyBusinessDays": [1, -1], "hours": [9]}, "excludedCalendars": ["us", "b"], "onExcludedDay": "previousBusinessDay"}, "catchUp": "all", "catchUpWindow": "P1D"}`,
	} {
		f.Add([]byte(bad), int64(1767225600))
	}
	f.Fuzz(func(t *testing.T, data []byte, nowUnix int64) {
		// Creation times from 1970 to 2200.
		now := time.Unix(((nowUnix%7258118400)+7258118400)%7258118400, 0).UTC()
		done := make(chan struct{})
		var instants []time.Time
		var count int
		go func() {
			defer close(done)
			p, errs := ParseJob(data, now)
			if len(errs) > 0 {
				for _, e := range errs {
					if e.Message == "" {
						t.Errorf("an error without a message at %q", e.Path)
					}
				}
				return
			}
			// Every calendar a job excludes is the same holiday calendar.
			var cals []*Calendar
			if p.Recurrence != nil {
				holidays := usHolidays()
				for _, name := range p.Recurrence.ExcludedCalendars {
					c, err := CompileCalendar(name, &holidays)
					if err != nil {
						t.Errorf("calendar: %v", err)
						return
					}
					cals = append(cals, c)
				}
			}
			s, err := NewSchedule(&p, now, cals...)
			if err != nil {
				t.Errorf("a valid job does not compile: %v", err)
				return
			}
			count = s.Count()
			instants = s.Upcoming(50)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer after 10 s for %q", data)
		}
		for i := 1; i < len(instants); i++ {
			if !instants[i].After(instants[i-1]) {
				t.Fatalf("instants do not increase: %s then %s", instants[i-1], instants[i])
			}
		}
		if count > 0 && len(instants) > count {
			t.Fatalf("%d instants for count %d", len(instants), count)
		}
	})
}
