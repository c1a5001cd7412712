package contracts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxJobBytes is the largest job definition accepted: 16 KB.
const MaxJobBytes = 16 * 1024

// envelopePrefix starts every path of a job given in its ARM envelope.
const envelopePrefix = "properties."

// DecodedJob is a job definition read by DecodeJob.
type DecodedJob struct {
	Properties JobProperties
	// Prefix is "properties." when the input was the ARM envelope
	// {"properties": {...}} and "" when it was the bare properties object.
	// Every path reported for this job starts with it.
	Prefix string
}

// DecodeJob reads a job definition, forgivingly, the way the original service
// did: the ARM envelope {"properties": {...}} or the bare properties object;
// property names and enum values in any case; schedule elements as one value
// or an array. It does not stop at the first problem: it returns every one,
// each with its JSON path, and the properties it could read. A definition
// larger than MaxJobBytes is reported and still read.
//
// Enum values are stored canonical; schedule elements sorted and without
// duplicates; date-times resolved to instants (see ParseDateTime: a value
// without an offset is UTC, or local time in recurrence.timeZone when that is
// set). The read-only status is ignored. DecodeJob checks form only: whether a
// value is allowed (ranges, required properties, which payload an action
// type needs) is for validation.
func DecodeJob(data []byte) (DecodedJob, FieldErrors) {
	rep := &report{}
	if len(data) > MaxJobBytes {
		rep.addRoot(fmt.Sprintf("the job definition is %d bytes; the limit is %d bytes (16 KB)", len(data), MaxJobBytes))
	}
	top, ok := readDocument(data, rep)
	if !ok {
		return DecodedJob{}, rep.result()
	}
	var job DecodedJob
	props := top
	if top.has("properties") {
		job.Prefix = envelopePrefix
		props = object{path: "properties", rep: rep} // absent, null or not an object: empty
		if o, ok := top.get("properties").object(); ok {
			props = o
		}
	}
	job.Properties = readJobProperties(props)
	return job, rep.result()
}

// readDocument parses data and returns its top-level object.
func readDocument(data []byte, rep *report) (object, bool) {
	tree, err := parseJSON(data)
	if err != nil {
		rep.addRoot(err.Error())
		return object{}, false
	}
	members, ok := tree.(jsonObject)
	if !ok {
		rep.addRoot("the body must be a JSON object")
		return object{}, false
	}
	return object{members: members, rep: rep}, true
}

func readJobProperties(o object) JobProperties {
	// The time zone is read first: it says how startTime and endTime read.
	recurrence, hasRecurrence := o.get("recurrence").object()
	var zone recurrenceZone
	if hasRecurrence {
		zone = readTimeZone(recurrence.get("timeZone"))
	}
	p := JobProperties{
		StartTime: o.get("startTime").dateTime(zone.loc),
		Action:    readAction(o.get("action")),
		State:     enumValue(o.get("state"), JobStates),
		// status is read-only: never taken from input.
		CatchUp:          enumValue(o.get("catchUp"), CatchUpPolicies),
		CatchUpWindow:    o.get("catchUpWindow").duration(),
		Overlap:          enumValue(o.get("overlap"), OverlapPolicies),
		PauseAfterFaults: o.get("pauseAfterFaults").integer(),
	}
	if hasRecurrence {
		p.Recurrence = readRecurrence(recurrence, zone)
	}
	return p
}

func readRecurrence(o object, zone recurrenceZone) *Recurrence {
	return &Recurrence{
		Frequency: enumValue(o.get("frequency"), Frequencies),
		Interval:  o.get("interval").integer(),
		Count:     o.get("count").integer(),
		EndTime:   o.get("endTime").dateTime(zone.loc),
		Schedule:  readSchedule(o.get("schedule")),
		TimeZone:  zone.name,

		FlexibleWindow:    o.get("flexibleWindow").duration(),
		ExcludedCalendars: readSet(o.get("excludedCalendars"), readString, strings.Compare),
		OnExcludedDay:     enumValue(o.get("onExcludedDay"), ExcludedDayActions),
	}
}

// recurrenceZone is a recurrence's time zone: its name as given and the zone
// in which date-times without an offset are read (nil for UTC).
type recurrenceZone struct {
	name string
	loc  *time.Location
}

// readTimeZone loads the zone that recurrence.timeZone names; an unknown
// name is reported and read as UTC.
func readTimeZone(f field) recurrenceZone {
	name := f.text()
	if name == "" {
		return recurrenceZone{}
	}
	loc, err := LoadZone(name)
	if err != nil || name == "Local" { // Local is this machine's zone, not a name
		f.fail("unknown time zone %q; use an IANA name such as Europe/Berlin", name)
		return recurrenceZone{name: name}
	}
	return recurrenceZone{name: name, loc: loc}
}

func readSchedule(f field) *Schedule {
	o, ok := f.object()
	if !ok {
		return nil
	}
	return &Schedule{
		WeekDays:           readSet(o.get("weekDays"), readEnum(DaysOfWeek), compareWeekDays),
		Hours:              readSet(o.get("hours"), readInt, cmp.Compare[int]),
		Minutes:            readSet(o.get("minutes"), readInt, cmp.Compare[int]),
		MonthDays:          readSet(o.get("monthDays"), readInt, cmp.Compare[int]),
		MonthlyOccurrences: readSet(o.get("monthlyOccurrences"), readMonthlyOccurrence, compareMonthlyOccurrences),

		MonthlyBusinessDays: readSet(o.get("monthlyBusinessDays"), readInt, cmp.Compare[int]),
	}
}

func readInt(f field) (int, bool) {
	n := f.integer()
	if n == nil {
		return 0, false
	}
	return *n, true
}

func readString(f field) (string, bool) { return f.str() }

func readEnum[T ~string](values []T) func(field) (T, bool) {
	return func(f field) (T, bool) { return enum(f, values) }
}

func readMonthlyOccurrence(f field) (MonthlyOccurrence, bool) {
	o, ok := f.object()
	if !ok {
		return MonthlyOccurrence{}, false
	}
	day := o.get("day")
	occurrence := o.get("occurrence").integer()
	if !day.given() {
		day.fail("required; use one of %s", EnumList(DaysOfWeek))
		return MonthlyOccurrence{}, false
	}
	d, ok := enum(day, DaysOfWeek)
	return MonthlyOccurrence{Day: d, Occurrence: occurrence}, ok
}

// compareWeekDays orders days Monday first.
func compareWeekDays(a, b DayOfWeek) int {
	return cmp.Compare(slices.Index(DaysOfWeek, a), slices.Index(DaysOfWeek, b))
}

// compareMonthlyOccurrences orders by day, then occurrence with "every" (nil)
// first.
func compareMonthlyOccurrences(a, b MonthlyOccurrence) int {
	if c := compareWeekDays(a.Day, b.Day); c != 0 {
		return c
	}
	switch {
	case a.Occurrence == nil && b.Occurrence == nil:
		return 0
	case a.Occurrence == nil:
		return -1
	case b.Occurrence == nil:
		return 1
	}
	return cmp.Compare(*a.Occurrence, *b.Occurrence)
}
