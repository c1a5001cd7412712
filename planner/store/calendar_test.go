package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

func newCalendar(ref contracts.CollectionRef, name string) Calendar {
	return Calendar{Collection: ref, Name: name, Properties: contracts.CalendarProperties{
		Description: "holidays",
		Dates:       []contracts.CalendarDate{{Date: "2026-12-24"}, {Date: "2026-01-01", Name: "New Year"}},
	}}
}

func TestCalendars(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a calendar is created, read, replaced and deleted", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		created, err := s.PutCalendar(ctx, newCalendar(collRef, "Holidays"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if created.Revision == 0 || created.Created.IsZero() {
			t.Fatalf("created = %+v", created)
		}
		if created.Properties.Dates[0].Date != "2026-01-01" {
			t.Errorf("dates not stored sorted: %+v", created.Properties.Dates)
		}
		got, err := s.GetCalendar(ctx, collRef, "HOLIDAYS")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Holidays" || got.Revision != created.Revision || !reflect.DeepEqual(got.Properties, created.Properties) {
			t.Fatalf("read %+v, wrote %+v", got, created)
		}
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "holidays"), 0); !errors.Is(err, ErrExists) {
			t.Fatalf("creating it again in another case: err = %v, want ErrExists", err)
		}
		got.Properties.Description = "changed"
		replaced, err := s.PutCalendar(ctx, got, got.Revision)
		if err != nil {
			t.Fatal(err)
		}
		if replaced.Revision <= got.Revision || !replaced.Created.Equal(created.Created) {
			t.Fatalf("replaced = %+v", replaced)
		}
		if _, err := s.PutCalendar(ctx, got, got.Revision); !errors.Is(err, ErrConflict) {
			t.Fatalf("replacing at an old revision: err = %v, want ErrConflict", err)
		}
		if err := s.DeleteCalendar(ctx, collRef, "holidays"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCalendar(ctx, collRef, "Holidays"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after delete: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteCalendar(ctx, collRef, "Holidays"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("a calendar needs its collection", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "h"), 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "bad.name"), 0); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("err = %v, want ErrInvalidName", err)
		}
	})

	t.Run("a collection lists its own calendars, sorted, and jobs never see them", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		other := contracts.CollectionRef{Subscription: "Sub-1", ResourceGroup: "RG", Collection: "Coll2"}
		mustPutCollection(t, s, other)
		for _, name := range []string{"b", "A", "c"} {
			if _, err := s.PutCalendar(ctx, newCalendar(collRef, name), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PutCalendar(ctx, newCalendar(other, "z"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("j1")), 0); err != nil {
			t.Fatal(err)
		}
		cals, err := s.Calendars(ctx, collRef)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cals {
			names = append(names, c.Name)
		}
		if !reflect.DeepEqual(names, []string{"A", "b", "c"}) {
			t.Errorf("calendars %v, want [A b c]", names)
		}
		jobs, err := s.ListJobs(ctx, collRef)
		if err != nil || len(jobs) != 1 {
			t.Errorf("jobs %d, %v; want the one job", len(jobs), err)
		}
		if n, err := s.CountJobs(ctx, collRef); err != nil || n != 1 {
			t.Errorf("count %d, %v; want 1", n, err)
		}
		cols, err := s.ListCollections(ctx, "", "")
		if err != nil || len(cols) != 2 {
			t.Errorf("collections %d, %v; want 2", len(cols), err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes, ready, err := s.WatchJobs(wctx)
		if err != nil {
			t.Fatal(err)
		}
		var seen []Change
		for done := false; !done; {
			select {
			case c := <-changes:
				seen = append(seen, c)
			case <-ready:
				done = true
			}
		}
		if len(seen) != 1 || seen[0].Err != nil || seen[0].Job == nil {
			t.Errorf("the job watch delivered %+v, want the one job", seen)
		}
	})

	t.Run("deleting a collection deletes its calendars", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "h"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteCollection(ctx, collRef); err != nil {
			t.Fatal(err)
		}
		if _, err := b.kv.Get(ctx, collRef.CalendarKVKey("h")); err == nil {
			t.Fatal("the calendar outlived its collection")
		}
		mustPutCollection(t, s, collRef)
		if cals, err := s.Calendars(ctx, collRef); err != nil || len(cals) != 0 {
			t.Fatalf("a collection created again has calendars %+v, %v", cals, err)
		}
	})

	t.Run("a calendar written while its collection is being deleted is removed again", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		// The state DeleteCollection leaves between its mark and the end.
		e, err := b.kv.Get(ctx, collRef.KVKey())
		if err != nil {
			t.Fatal(err)
		}
		marked := []byte(string(e.Value()[:len(e.Value())-1]) + `,"deleting":true}`)
		if _, err := b.kv.Put(ctx, collRef.KVKey(), marked); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "h"), 0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := b.kv.Get(ctx, collRef.CalendarKVKey("h")); err == nil {
			t.Fatal("the calendar was kept")
		}
	})

	t.Run("the calendar watch delivers the current calendars, then each change", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "before"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("j1")), 0); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes, ready, err := s.WatchCalendars(wctx)
		if err != nil {
			t.Fatal(err)
		}
		next := func() CalendarChange {
			t.Helper()
			select {
			case c := <-changes:
				return c
			case <-time.After(5 * time.Second):
				t.Fatal("no change within 5 s")
			}
			return CalendarChange{}
		}
		if c := next(); c.Calendar == nil || c.Calendar.Name != "before" {
			t.Fatalf("first change %+v, want the calendar before", c)
		}
		select {
		case <-ready:
		case <-time.After(5 * time.Second):
			t.Fatal("not ready")
		}
		if _, err := s.PutCalendar(ctx, newCalendar(collRef, "after"), 0); err != nil {
			t.Fatal(err)
		}
		if c := next(); c.Calendar == nil || c.Calendar.Name != "after" || c.Key != collRef.CalendarKVKey("after") {
			t.Fatalf("change %+v, want the calendar after", c)
		}
		if err := s.DeleteCalendar(ctx, collRef, "before"); err != nil {
			t.Fatal(err)
		}
		if c := next(); !c.Deleted || c.Key != collRef.CalendarKVKey("before") {
			t.Fatalf("change %+v, want the deletion of before", c)
		}
	})
}
