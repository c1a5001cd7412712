package loadtest

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	first := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	t.Run("a burst has every job due at the first instant", func(t *testing.T) {
		p := Plan{Jobs: 30, First: first}
		if !p.Due(0).Equal(first) || !p.Due(29).Equal(first) || !p.Last().Equal(first) {
			t.Errorf("due %v %v, last %v", p.Due(0), p.Due(29), p.Last())
		}
	})
	t.Run("a steady load has its rate of jobs due at each whole second", func(t *testing.T) {
		p := Plan{Jobs: 20, PerSecond: 10, First: first}
		if !p.Due(9).Equal(first) || !p.Due(10).Equal(first.Add(time.Second)) || !p.Last().Equal(first.Add(time.Second)) {
			t.Errorf("due %v %v, last %v", p.Due(9), p.Due(10), p.Last())
		}
	})
	t.Run("a job's definition calls the sink with its number, once or every minute, without retries", func(t *testing.T) {
		var def struct {
			StartTime string `json:"startTime"`
			Action    struct {
				Request struct {
					URI, Method string
				} `json:"request"`
				RetryPolicy struct {
					RetryType string `json:"retryType"`
				} `json:"retryPolicy"`
			} `json:"action"`
			Recurrence *struct {
				Frequency string `json:"frequency"`
				Interval  int    `json:"interval"`
			} `json:"recurrence"`
		}
		p := Plan{Jobs: 20, PerSecond: 10, First: first}
		if err := json.Unmarshal(p.Definition(12, "http://127.0.0.1:9/bench-x"), &def); err != nil {
			t.Fatal(err)
		}
		if def.StartTime != "2030-01-07T09:00:01Z" || def.Action.Request.URI != "http://127.0.0.1:9/bench-x/12" ||
			def.Action.Request.Method != "POST" || def.Action.RetryPolicy.RetryType != "None" || def.Recurrence != nil {
			t.Errorf("%+v", def)
		}
		p.Recurring = true
		if err := json.Unmarshal(p.Definition(0, "http://h"), &def); err != nil || def.Recurrence == nil ||
			def.Recurrence.Frequency != "Minute" || def.Recurrence.Interval != 1 {
			t.Errorf("recurring: %v %+v", err, def.Recurrence)
		}
	})
	t.Run("validation names what is wrong", func(t *testing.T) {
		for _, p := range []Plan{{Jobs: 0, First: first}, {Jobs: 1, PerSecond: -1, First: first}, {Jobs: 1, First: first.Add(time.Millisecond)}} {
			if p.Validate() == nil {
				t.Errorf("%+v passes", p)
			}
		}
		if err := (Plan{Jobs: 1, First: first}).Validate(); err != nil {
			t.Error(err)
		}
	})
}

func TestLead(t *testing.T) {
	t.Parallel()
	first := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	margin := 10 * time.Second
	tests := []struct {
		name string
		plan Plan
		rate float64
		want time.Duration
	}{
		// 1,000 creates at 100/s, halved: 20 s, all before the one due time.
		{"a burst leaves the time of every create, and the margin", Plan{Jobs: 1000, First: first}, 100, 31 * time.Second},
		// Created faster than they fall due: only the first second's jobs count.
		{"a steady load created faster than it falls due needs the time of its first second", Plan{Jobs: 3000, PerSecond: 100, First: first}, 1000, 11 * time.Second},
		// 100 a second due, 50 created, halved: job i is created at 0.04·(i+1) s, due at
		// ⌊i/100⌋ s; the last, created at 120 s and due at 29 s, lags most, by 91 s.
		{"a steady load created slower than it falls due needs the lag of its last job", Plan{Jobs: 3000, PerSecond: 100, First: first}, 50, 102 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.plan.Lead(tt.rate, margin); got != tt.want {
				t.Errorf("Lead = %v, want %v", got, tt.want)
			}
		})
	}
}
