package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

// calendarRef names a calendar of a job collection.
type calendarRef struct {
	coll contracts.CollectionRef
	name string
}

func calendarID(ref calendarRef) string { return collectionID(ref.coll) + "/calendars/" + ref.name }

func calendarWhat(ref calendarRef) string {
	return fmt.Sprintf("calendar %q in job collection %q", ref.name, ref.coll.Collection)
}

func renderCalendar(c store.Calendar) contracts.CalendarDefinition {
	ref := calendarRef{c.Collection, c.Name}
	return contracts.CalendarDefinition{
		ID: calendarID(ref), Type: contracts.CalendarResourceType, Name: c.Collection.Collection + "/" + c.Name, Properties: c.Properties,
	}
}

// maxNamingJobs is how many of the jobs that name a calendar a refused
// deletion lists.
const maxNamingJobs = 10

func (s *Server) listCalendars(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	ctx := r.Context()
	if _, err := s.store.GetCollection(ctx, ref); err != nil {
		return storeError(err, collectionWhat(ref))
	}
	cals, err := s.store.Calendars(ctx, ref)
	if err != nil {
		return storeError(err, "the calendars of "+collectionWhat(ref))
	}
	out := struct {
		Value []contracts.CalendarDefinition `json:"value"`
	}{Value: make([]contracts.CalendarDefinition, len(cals))}
	for i, c := range cals {
		out.Value[i] = renderCalendar(c)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getCalendar(w http.ResponseWriter, r *http.Request, ref calendarRef) *apiError {
	ctx := r.Context()
	if _, err := s.store.GetCollection(ctx, ref.coll); err != nil {
		return storeError(err, collectionWhat(ref.coll))
	}
	c, err := s.store.GetCalendar(ctx, ref.coll, ref.name)
	if err != nil {
		return storeError(err, calendarWhat(ref))
	}
	writeJSON(w, http.StatusOK, renderCalendar(c))
	return nil
}

// putCalendar creates or replaces a calendar from JSON, or from an
// iCalendar file when the Content-Type is text/calendar.
func (s *Server) putCalendar(w http.ResponseWriter, r *http.Request, ref calendarRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	props, e := decodeCalendarBody(r.Header.Get("Content-Type"), data)
	if e != nil {
		return e
	}
	return s.saveCalendar(w, r, ref, props, true)
}

// decodeCalendarBody reads a calendar: an iCalendar file for the content
// type text/calendar, else JSON.
func decodeCalendarBody(contentType string, data []byte) (contracts.CalendarProperties, *apiError) {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "text/calendar" {
		props, err := contracts.ImportICalendar(data)
		var errs contracts.ICalendarErrors
		switch {
		case errors.As(err, &errs):
			return props, invalidICalendar(errs)
		case err != nil:
			return props, newError(http.StatusBadRequest, codeBadRequest, "the iCalendar file cannot be imported: "+err.Error())
		}
		return props, nil
	}
	c, errs := contracts.DecodeCalendar(data)
	if len(errs) > 0 {
		return c.Properties, invalid(errs)
	}
	return c.Properties, nil
}

// invalidICalendar is a 400 naming each line of an iCalendar file that
// cannot be imported.
func invalidICalendar(errs contracts.ICalendarErrors) *apiError {
	lines := make([]string, len(errs))
	details := make([]armErrorBody, len(errs))
	for i, x := range errs {
		lines[i] = x.Error()
		target := ""
		if x.Line > 0 {
			target = fmt.Sprintf("line %d", x.Line)
		}
		details[i] = armErrorBody{Code: codeBadRequest, Target: target, Message: x.Message}
	}
	e := newError(http.StatusBadRequest, codeBadRequest, "The iCalendar file cannot be imported: "+strings.Join(lines, "; "))
	e.body.Details = details
	return e
}

func (s *Server) patchCalendar(w http.ResponseWriter, r *http.Request, ref calendarRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	ctx := r.Context()
	if _, err := s.store.GetCollection(ctx, ref.coll); err != nil {
		return storeError(err, collectionWhat(ref.coll))
	}
	existing, err := s.store.GetCalendar(ctx, ref.coll, ref.name)
	if err != nil {
		return storeError(err, calendarWhat(ref))
	}
	merged, e := mergePatch(renderCalendar(existing), data, false)
	if e != nil {
		return e
	}
	c, errs := contracts.DecodeCalendar(merged)
	if len(errs) > 0 {
		return invalid(errs)
	}
	return s.saveCalendar(w, r, ref, c.Properties, false)
}

// saveCalendar creates the calendar (201) or replaces the stored one (200)
// with props, retrying when another request changed it at the same time.
func (s *Server) saveCalendar(w http.ResponseWriter, r *http.Request, ref calendarRef, props contracts.CalendarProperties, mayCreate bool) *apiError {
	ctx := r.Context()
	now := s.cfg.Now().UTC()
	for attempt := 0; ; attempt++ {
		if _, err := s.store.GetCollection(ctx, ref.coll); err != nil {
			return storeError(err, collectionWhat(ref.coll))
		}
		existing, err := s.store.GetCalendar(ctx, ref.coll, ref.name)
		c := store.Calendar{Collection: ref.coll, Name: ref.name, Properties: props, Created: now, Updated: now}
		status, event := http.StatusCreated, "calendar created"
		switch {
		case err == nil:
			// Names are case-insensitive: it keeps the name it was created with.
			c.Collection, c.Name, c.Created = existing.Collection, existing.Name, existing.Created
			status, event = http.StatusOK, "calendar updated"
		case !errors.Is(err, store.ErrNotFound):
			return storeError(err, calendarWhat(ref))
		case !mayCreate:
			return storeError(err, calendarWhat(ref))
		}
		saved, err := s.store.PutCalendar(ctx, c, existing.Revision)
		if (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict)) && attempt < saveAttempts {
			continue
		}
		if err != nil {
			return storeError(err, calendarWhat(ref))
		}
		s.audit(ctx, event, slog.String("calendar", calendarID(ref)))
		writeJSON(w, status, renderCalendar(saved))
		return nil
	}
}

// deleteCalendar deletes a calendar no job of its collection names; one
// that jobs name is a 409 listing some of them.
func (s *Server) deleteCalendar(w http.ResponseWriter, r *http.Request, ref calendarRef) *apiError {
	ctx := r.Context()
	if _, err := s.store.GetCollection(ctx, ref.coll); err != nil {
		return storeError(err, collectionWhat(ref.coll))
	}
	if _, err := s.store.GetCalendar(ctx, ref.coll, ref.name); err != nil {
		return storeError(err, calendarWhat(ref))
	}
	jobs, err := s.store.ListSealedJobs(ctx, ref.coll)
	if err != nil {
		return storeError(err, "the jobs of "+collectionWhat(ref.coll))
	}
	var naming []string
	for _, j := range jobs {
		if namesCalendar(j.Properties, ref.name) {
			naming = append(naming, j.Ref.Job)
		}
	}
	if len(naming) > 0 {
		shown := naming[:min(len(naming), maxNamingJobs)]
		more := ""
		if len(naming) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(naming)-len(shown))
		}
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf(
			"%s cannot be deleted: %d job(s) exclude it in recurrence.excludedCalendars: %s%s; remove it from them first",
			calendarWhat(ref), len(naming), strings.Join(shown, ", "), more))
	}
	if err := s.store.DeleteCalendar(ctx, ref.coll, ref.name); err != nil {
		return storeError(err, calendarWhat(ref))
	}
	s.audit(ctx, "calendar deleted", slog.String("calendar", calendarID(ref)))
	w.WriteHeader(http.StatusOK)
	return nil
}

// namesCalendar reports whether the job excludes the calendar (names are
// case-insensitive).
func namesCalendar(p contracts.JobProperties, name string) bool {
	if p.Recurrence == nil {
		return false
	}
	for _, c := range p.Recurrence.ExcludedCalendars {
		if strings.EqualFold(c, name) {
			return true
		}
	}
	return false
}

// checkExcludedCalendars answers 400 for a job that names a calendar its
// collection does not hold, at properties.recurrence.excludedCalendars[i].
func (s *Server) checkExcludedCalendars(ctx context.Context, coll contracts.CollectionRef, p *contracts.JobProperties) *apiError {
	if p.Recurrence == nil || len(p.Recurrence.ExcludedCalendars) == 0 {
		return nil
	}
	cals, err := s.store.Calendars(ctx, coll)
	if err != nil {
		return storeError(err, "the calendars of "+collectionWhat(coll))
	}
	var errs contracts.FieldErrors
	for i, name := range p.Recurrence.ExcludedCalendars {
		found := false
		for _, c := range cals {
			if strings.EqualFold(c.Name, name) {
				found = true
				break
			}
		}
		if !found {
			errs.Add(fmt.Sprintf("properties.recurrence.excludedCalendars[%d]", i),
				"calendar %s does not exist in collection %s; create it first with PUT …/jobCollections/%s/calendars/%s",
				contracts.QuoteName(name), contracts.QuoteName(coll.Collection), coll.Collection, name)
		}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	return nil
}
