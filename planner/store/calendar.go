package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// Calendar is a holiday calendar of a job collection as stored, under
// contracts.CollectionRef.CalendarKVKey ("cal.<sub>.<rg>.<collection>.<name>")
// in the jobs' bucket.
type Calendar struct {
	// Collection is the collection it belongs to, and Name its name as the
	// user gave it (matched without regard to case).
	Collection contracts.CollectionRef
	Name       string
	// Properties are stored normalized (contracts.NormalizeCalendar).
	Properties contracts.CalendarProperties
	// Created is stamped by PutCalendar when it is zero; Updated on every
	// PutCalendar.
	Created, Updated time.Time
	// Revision is the KV revision, set when read or written.
	Revision uint64
}

// Key returns the calendar's KV key.
func (c Calendar) Key() string { return c.Collection.CalendarKVKey(c.Name) }

// calendarRecord is a calendar's JSON at rest.
type calendarRecord struct {
	Collection contracts.CollectionRef      `json:"collection"`
	Name       string                       `json:"name"`
	Properties contracts.CalendarProperties `json:"properties"`
	Created    time.Time                    `json:"created"`
	Updated    time.Time                    `json:"updated"`
}

func decodeCalendar(e jetstream.KeyValueEntry) (Calendar, error) {
	var r calendarRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Calendar{}, fmt.Errorf("decoding calendar %s: %w", e.Key(), err)
	}
	return Calendar{Collection: r.Collection, Name: r.Name, Properties: r.Properties, Created: r.Created, Updated: r.Updated, Revision: e.Revision()}, nil
}

func checkCalendarRef(ref contracts.CollectionRef, name string) error {
	return checkNames(func() error { return errors.Join(ref.Validate(), contracts.ValidateName("calendar", name)) })
}

// GetCalendar returns the collection's calendar named name, in any case
// (ErrNotFound when there is none). It does not read the collection.
func (s *Store) GetCalendar(ctx context.Context, ref contracts.CollectionRef, name string) (Calendar, error) {
	if err := checkCalendarRef(ref, name); err != nil {
		return Calendar{}, err
	}
	key := ref.CalendarKVKey(name)
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Calendar{}, fmt.Errorf("calendar %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Calendar{}, fmt.Errorf("reading calendar %s: %w", key, err)
	}
	return decodeCalendar(e)
}

// PutCalendar writes c, normalized, in its collection, which must exist
// (ErrNotFound otherwise, and while it is being deleted). With expected 0
// it creates the calendar (ErrExists when one of that name exists, in any
// case); otherwise it replaces it if its revision is still expected
// (ErrConflict when not, ErrNotFound when it is gone). It stamps Created
// when zero and Updated always, and returns c as written.
//
// A calendar never outlives its collection: after the write it reads the
// collection again, and deletes the calendar when the collection's
// deletion has begun, since DeleteCollection may have listed the
// calendars before this one was written.
func (s *Store) PutCalendar(ctx context.Context, c Calendar, expected uint64) (Calendar, error) {
	if err := checkCalendarRef(c.Collection, c.Name); err != nil {
		return Calendar{}, err
	}
	key := c.Key()
	if _, err := s.GetCollection(ctx, c.Collection); err != nil {
		return Calendar{}, fmt.Errorf("writing calendar %s: %w", key, err)
	}
	c.Properties = cloneCalendar(c.Properties)
	contracts.NormalizeCalendar(&c.Properties)
	now := s.now()
	if c.Created.IsZero() {
		c.Created = now
	}
	c.Created, c.Updated = timestamp(c.Created), timestamp(now)
	value, err := json.Marshal(calendarRecord{Collection: c.Collection, Name: c.Name, Properties: c.Properties, Created: c.Created, Updated: c.Updated})
	if err != nil {
		return Calendar{}, fmt.Errorf("encoding calendar %s: %w", key, err)
	}
	var rev uint64
	if expected == 0 {
		rev, err = s.kv.Create(ctx, key, value)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Calendar{}, fmt.Errorf("creating calendar %s: %w", key, ErrExists)
		}
		if err != nil {
			return Calendar{}, fmt.Errorf("creating calendar %s: %w", key, err)
		}
	} else if rev, err = s.update(ctx, "calendar", key, value, expected); err != nil {
		return Calendar{}, err
	}
	if _, err := s.GetCollection(ctx, c.Collection); err != nil {
		ctx, cancel := cleanupContext(ctx)
		defer cancel()
		if derr := s.kv.Delete(ctx, key, jetstream.LastRevision(rev)); derr != nil && !isMismatch(derr) {
			err = errors.Join(err, fmt.Errorf("deleting calendar %s again: %w", key, derr))
		}
		return Calendar{}, fmt.Errorf("writing calendar %s: %w", key, err)
	}
	c.Revision = rev
	return c, nil
}

// cloneCalendar copies p so that normalizing it leaves the caller's slices
// alone.
func cloneCalendar(p contracts.CalendarProperties) contracts.CalendarProperties {
	p.Dates = slices.Clone(p.Dates)
	p.Ranges = slices.Clone(p.Ranges)
	p.Yearly = slices.Clone(p.Yearly)
	return p
}

// DeleteCalendar deletes the collection's calendar named name
// (ErrNotFound when there is none). Whether jobs still name it is for the
// caller to check.
func (s *Store) DeleteCalendar(ctx context.Context, ref contracts.CollectionRef, name string) error {
	if err := checkCalendarRef(ref, name); err != nil {
		return err
	}
	return s.deleteKey(ctx, "calendar", ref.CalendarKVKey(name))
}

// Calendars returns every calendar of the collection, sorted by name
// (case-insensitive), through one scan of its calendar keys: what the API
// lists and what the planner compiles a collection's calendars from. It
// does not check that the collection exists: a missing one has none.
func (s *Store) Calendars(ctx context.Context, ref contracts.CollectionRef) ([]Calendar, error) {
	if err := checkCollectionRef(ref); err != nil {
		return nil, err
	}
	entries, err := s.scan(ctx, ref.CalendarsKVPrefix()+"*", false)
	if err != nil {
		return nil, err
	}
	out := make([]Calendar, 0, len(entries))
	for _, e := range entries {
		c, err := decodeCalendar(e)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Calendar) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, nil
}

// deleteCalendars deletes every calendar of the collection, for
// DeleteCollection.
func (s *Store) deleteCalendars(ctx context.Context, ref contracts.CollectionRef) error {
	return s.deleteUnder(ctx, "calendar", ref.CalendarsKVPrefix())
}

// CalendarChange is one change to a calendar, as WatchCalendars delivers
// it.
type CalendarChange struct {
	// Key is the calendar's KV key.
	Key string
	// Calendar is the calendar as written; nil when deleted or when Err is
	// set.
	Calendar *Calendar
	// Deleted is set when the calendar was deleted (alone or with its
	// collection).
	Deleted bool
	// Revision is the KV revision of the change.
	Revision uint64
	// Err is set when the record could not be read. The watch goes on.
	Err error
}

// WatchCalendars streams every calendar change of every collection until
// ctx ends, as WatchJobs does jobs: first the current calendars, then each
// later put and delete in KV order. ready is closed once the current
// calendars have all been received; changes is closed when ctx ends or the
// connection closes. Its filter (contracts.CalendarsKVFilter) matches
// calendar keys only.
func (s *Store) WatchCalendars(ctx context.Context) (changes <-chan CalendarChange, ready <-chan struct{}, err error) {
	return watchKeys(ctx, s.kv, contracts.CalendarsKVFilter, "calendars", func(e jetstream.KeyValueEntry, deleted bool) CalendarChange {
		c := CalendarChange{Key: e.Key(), Deleted: deleted, Revision: e.Revision()}
		if !deleted {
			if cal, err := decodeCalendar(e); err != nil {
				c.Err = err
			} else {
				c.Calendar = &cal
			}
		}
		return c
	})
}
