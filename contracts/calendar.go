package contracts

// CalendarResourceType is the resource type of a calendar's ARM envelope.
const CalendarResourceType = "Microsoft.Scheduler/jobCollections/calendars"

// CalendarDefinition is a holiday calendar of a job collection in its ARM
// envelope (an extension to the 2016-03-01 API). Jobs of the collection
// name it in recurrence.excludedCalendars.
type CalendarDefinition struct {
	ID         string             `json:"id,omitempty"`
	Type       string             `json:"type,omitempty"`
	Name       string             `json:"name,omitempty"`
	Properties CalendarProperties `json:"properties"`
}

// CalendarProperties are the days a calendar holds: single dates, ranges of
// dates, and rules that recur every year. A date is a local date
// (YYYY-MM-DD) and holds in the time zone of the job that excludes it.
type CalendarProperties struct {
	Description string         `json:"description,omitempty"`
	Dates       []CalendarDate `json:"dates,omitempty"`
	Ranges      []DateRange    `json:"ranges,omitempty"`
	Yearly      []YearlyDate   `json:"yearly,omitempty"`
}

// CalendarDate is one date a calendar holds.
type CalendarDate struct {
	Date string `json:"date"` // YYYY-MM-DD
	Name string `json:"name,omitempty"`
}

// DateRange holds every date from Start to End, both included.
type DateRange struct {
	Start string `json:"start"` // YYYY-MM-DD
	End   string `json:"end"`   // YYYY-MM-DD, not before Start
	Name  string `json:"name,omitempty"`
}

// YearlyDate holds a date in every year: a fixed day of a month
// ({month 12, day 25}; a negative day counts from the month's end), or the
// nth weekday of a month ({month 11, weekDay Thursday, occurrence 4};
// occurrence ±1…±5, negative from the end). Exactly one of Day and
// WeekDay is set.
type YearlyDate struct {
	Name       string    `json:"name,omitempty"`
	Month      int       `json:"month"`
	Day        *int      `json:"day,omitempty"`
	WeekDay    DayOfWeek `json:"weekDay,omitempty"`
	Occurrence *int      `json:"occurrence,omitempty"`
}
