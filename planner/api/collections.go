package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

func collectionID(ref contracts.CollectionRef) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Scheduler/jobCollections/%s",
		ref.Subscription, ref.ResourceGroup, ref.Collection)
}

func renderCollection(c store.Collection) contracts.JobCollectionDefinition {
	props := c.Properties
	return contracts.JobCollectionDefinition{
		ID: collectionID(c.Ref), Type: contracts.JobCollectionResourceType, Name: c.Ref.Collection,
		Location: c.Location, Tags: c.Tags, Properties: &props,
	}
}

// listCollections lists the collections of a resource group, of a
// subscription (rg ""), or of every subscription (sub "" too, an
// extension) that the request's principal may read, sorted by
// subscription, resource group and name.
func (s *Server) listCollections(w http.ResponseWriter, r *http.Request, sub, rg string) *apiError {
	counts, e := parseExpand(r.URL.Query())
	if e != nil {
		return e
	}
	cols, err := s.store.ListCollections(r.Context(), sub, rg)
	if err != nil {
		return storeError(err, "the job collections")
	}
	cols = visibleCollections(r.Context(), cols)
	out := contracts.JobCollectionListResult{Value: make([]contracts.JobCollectionDefinition, len(cols))}
	for i, c := range cols {
		if out.Value[i], e = s.renderCollectionWith(r.Context(), c, counts); e != nil {
			return e
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getCollection(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	counts, e := parseExpand(r.URL.Query())
	if e != nil {
		return e
	}
	c, err := s.store.GetCollection(r.Context(), ref)
	if err != nil {
		return storeError(err, collectionWhat(ref))
	}
	def, e := s.renderCollectionWith(r.Context(), c, counts)
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, def)
	return nil
}

// expandJobCounts is the one value $expand takes.
const expandJobCounts = "jobCounts"

// parseExpand reads $expand on a collection or a listing of collections
// (an extension): "jobCounts", in any case, or nothing.
func parseExpand(q url.Values) (jobCounts bool, e *apiError) {
	v := q.Get("$expand")
	if v == "" {
		return false, nil
	}
	if !strings.EqualFold(strings.TrimSpace(v), expandJobCounts) {
		return false, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf(
			"$expand %s is not supported; the one value it takes is %s", contracts.QuoteName(v), expandJobCounts))
	}
	return true, nil
}

// renderCollectionWith renders the collection, with its jobs counted by
// state when jobCounts is set.
func (s *Server) renderCollectionWith(ctx context.Context, c store.Collection, jobCounts bool) (contracts.JobCollectionDefinition, *apiError) {
	def := renderCollection(c)
	if !jobCounts {
		return def, nil
	}
	jobs, err := s.store.ListSealedJobs(ctx, c.Ref)
	if err != nil {
		return def, storeError(err, "the jobs of "+collectionWhat(c.Ref))
	}
	counts := &contracts.JobCounts{}
	for _, j := range jobs {
		counts.Add(j.Properties.State)
	}
	def.Properties.JobCounts = counts
	return def, nil
}

func collectionWhat(ref contracts.CollectionRef) string {
	return fmt.Sprintf("job collection %q in resource group %q", ref.Collection, ref.ResourceGroup)
}

// readBody reads a request body, reporting a body over the limit as 413.
func readBody(r *http.Request) ([]byte, *apiError) {
	data, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, newError(http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("the request body is over %d bytes", tooLarge.Limit))
	case err != nil:
		return nil, newError(http.StatusBadRequest, codeBadRequest, "reading the request body: "+err.Error())
	}
	return data, nil
}

// decodeCollection decodes and validates a collection definition.
func decodeCollection(data []byte) (contracts.JobCollectionDefinition, *apiError) {
	def, errs := contracts.DecodeJobCollection(data)
	p := def.Properties
	if p == nil {
		p = &contracts.JobCollectionProperties{}
		def.Properties = p
	}
	if p.Sku == nil || p.Sku.Name == "" {
		p.Sku = &contracts.Sku{Name: contracts.SkuStandard}
	}
	switch p.State {
	case "":
		p.State = contracts.JobCollectionStateEnabled
	case contracts.JobCollectionStateDeleted:
		errs.Add("properties.state", "Deleted cannot be set; delete the job collection instead")
	}
	if q := p.Quota; q != nil {
		if q.MaxJobCount != nil && *q.MaxJobCount < 1 {
			errs.Add("properties.quota.maxJobCount", "must be at least 1, not %d", *q.MaxJobCount)
		}
		if q.MaxJobOccurrence != nil && *q.MaxJobOccurrence < 1 {
			errs.Add("properties.quota.maxJobOccurrence", "must be at least 1, not %d", *q.MaxJobOccurrence)
		}
		if m := q.MaxRecurrence; m != nil {
			if m.Frequency == "" {
				errs.Add("properties.quota.maxRecurrence.frequency", "required; one of %s", contracts.EnumList(contracts.Frequencies))
			}
			if m.Interval != nil && *m.Interval < 1 {
				errs.Add("properties.quota.maxRecurrence.interval", "must be at least 1, not %d", *m.Interval)
			}
		}
	}
	if len(errs) > 0 {
		return def, invalid(errs)
	}
	return def, nil
}

func (s *Server) putCollection(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	def, e := decodeCollection(data)
	if e != nil {
		return e
	}
	return s.saveCollection(w, r, ref, def, true)
}

// saveCollection creates the collection or replaces the stored one with def.
func (s *Server) saveCollection(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef, def contracts.JobCollectionDefinition, mayCreate bool) *apiError {
	ctx := r.Context()
	now := s.cfg.Now().UTC()
	for attempt := 0; ; attempt++ {
		existing, err := s.store.GetCollection(ctx, ref)
		switch {
		case errors.Is(err, store.ErrNotFound) && mayCreate:
			if e := s.checkCeilings(ctx, ref, nil, *def.Properties); e != nil {
				return e
			}
			c := store.Collection{Ref: ref, Location: def.Location, Tags: def.Tags, Properties: *def.Properties, Created: now, Updated: now}
			saved, err := s.store.PutCollection(ctx, c, 0)
			if errors.Is(err, store.ErrExists) && attempt < 3 {
				continue
			}
			if err != nil {
				return storeError(err, collectionWhat(ref))
			}
			s.audit(ctx, "job collection created", slog.String("collection", collectionID(ref)))
			writeJSON(w, http.StatusCreated, renderCollection(saved))
			return nil
		case err != nil:
			return storeError(err, collectionWhat(ref))
		}
		if e := s.checkCeilings(ctx, ref, &existing.Properties, *def.Properties); e != nil {
			return e
		}
		c := existing
		c.Location, c.Tags, c.Properties, c.Updated = def.Location, def.Tags, *def.Properties, now
		saved, err := s.store.PutCollection(ctx, c, existing.Revision)
		if errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue
		}
		if err != nil {
			return storeError(err, collectionWhat(ref))
		}
		if e := s.checkNewQuota(ctx, existing, saved.Properties); e != nil {
			s.restoreQuota(ctx, existing, saved)
			return e
		}
		s.audit(ctx, "job collection updated", slog.String("collection", collectionID(ref)))
		writeJSON(w, http.StatusOK, renderCollection(saved))
		return nil
	}
}

// checkNewQuota refuses a change of plan or quota that leaves the
// collection holding more than it allows: more jobs than its new
// maxJobCount, or a job that recurs more often than its new maxRecurrence
// (Completed and Faulted jobs do not run again, but they count). Only a
// quota made stricter is checked, so a collection over its quota can still
// be changed otherwise. It is called once the change is written, so that
// the jobs it lists include every job created under the old quota: a job
// created after the change was written finds the collection changed since
// its creator read it, and is checked against the new quota (see
// store.Admission). A refused change is then undone (restoreQuota).
func (s *Server) checkNewQuota(ctx context.Context, existing store.Collection, updated contracts.JobCollectionProperties) *apiError {
	oldMaxJobs, oldMaxRecurrence := effectiveQuota(existing.Properties)
	maxJobs, maxRecurrence := effectiveQuota(updated)
	if maxJobs >= oldMaxJobs && maxRecurrence <= oldMaxRecurrence {
		return nil
	}
	jobs, err := s.store.ListJobs(ctx, existing.Ref)
	if err != nil {
		return storeError(err, "the jobs of "+collectionWhat(existing.Ref))
	}
	if maxJobs < oldMaxJobs && len(jobs) > maxJobs {
		return newError(http.StatusConflict, codeQuotaExceeded, fmt.Sprintf(
			"%s holds %d jobs, more than the %d its new plan or quota allows (quota.maxJobCount); delete jobs first",
			collectionWhat(existing.Ref), len(jobs), maxJobs))
	}
	if maxRecurrence > oldMaxRecurrence {
		for _, j := range jobs {
			if final(j.Properties.State) {
				continue
			}
			if e := checkRecurrenceQuota(&j.Properties, j.Anchored, maxRecurrence); e != nil {
				e.body.Message = fmt.Sprintf("%s cannot take its new plan or quota: its job %q: %s", collectionWhat(existing.Ref), j.Ref.Job, e.body.Message)
				return e
			}
		}
	}
	return nil
}

// restoreQuotaAttempts bounds how often restoreQuota tries again when the
// collection changed meanwhile.
const restoreQuotaAttempts = 5

// restoreQuota puts back the plan and quota of old, after a stricter one
// (written, as in saved) was refused by checkNewQuota. Other changes made
// meanwhile are kept; a plan or quota changed again meanwhile is left as
// it is, as that change is checked by its own request. Creates refused in
// between were refused by a quota that held for that moment.
func (s *Server) restoreQuota(ctx context.Context, old, saved store.Collection) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for range restoreQuotaAttempts {
		cur, err := s.store.GetCollection(ctx, old.Ref)
		if err != nil || !sameQuota(cur.Properties, saved.Properties) {
			return
		}
		cur.Properties.Sku, cur.Properties.Quota = old.Properties.Sku, old.Properties.Quota
		_, err = s.store.PutCollection(ctx, cur, cur.Revision)
		if !errors.Is(err, store.ErrConflict) {
			if err != nil {
				s.cfg.Logger.Error("putting back the quota of a job collection after refusing a stricter one",
					slog.String("collection", collectionID(old.Ref)), slog.String("error", err.Error()))
			}
			return
		}
	}
}

// sameQuota reports whether two collections' plans and quotas are the same.
func sameQuota(a, b contracts.JobCollectionProperties) bool {
	ja, _ := json.Marshal([]any{a.Sku, a.Quota})
	jb, _ := json.Marshal([]any{b.Sku, b.Quota})
	return bytes.Equal(ja, jb)
}

func (s *Server) patchCollection(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	existing, err := s.store.GetCollection(r.Context(), ref)
	if err != nil {
		return storeError(err, collectionWhat(ref))
	}
	merged, e := mergePatch(renderCollection(existing), data, false)
	if e != nil {
		return e
	}
	def, e := decodeCollection(merged)
	if e != nil {
		return e
	}
	return s.saveCollection(w, r, ref, def, false)
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	if err := s.store.DeleteCollection(r.Context(), ref); err != nil {
		return storeError(err, collectionWhat(ref))
	}
	s.audit(r.Context(), "job collection deleted", slog.String("collection", collectionID(ref)))
	w.WriteHeader(http.StatusOK)
	return nil
}

// setCollectionEnabled enables or disables the collection and every job in
// it that is Enabled or Disabled (Completed and Faulted jobs stay so).
func (s *Server) setCollectionEnabled(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef, enable bool) *apiError {
	ctx := r.Context()
	state, jobState := contracts.JobCollectionStateDisabled, contracts.JobStateDisabled
	if enable {
		state, jobState = contracts.JobCollectionStateEnabled, contracts.JobStateEnabled
	}
	for attempt := 0; ; attempt++ {
		c, err := s.store.GetCollection(ctx, ref)
		if err != nil {
			return storeError(err, collectionWhat(ref))
		}
		c.Properties.State, c.Updated = state, s.cfg.Now().UTC()
		if _, err = s.store.PutCollection(ctx, c, c.Revision); errors.Is(err, store.ErrConflict) && attempt < 3 {
			continue
		} else if err != nil {
			return storeError(err, collectionWhat(ref))
		}
		break
	}
	jobs, err := s.store.ListJobs(ctx, ref)
	if err != nil {
		return storeError(err, "the jobs of "+collectionWhat(ref))
	}
	for _, j := range jobs {
		if e := s.setJobState(ctx, j, jobState); e != nil {
			return e
		}
	}
	s.audit(ctx, "job collection "+strings.ToLower(string(state)), slog.String("collection", collectionID(ref)))
	w.WriteHeader(http.StatusOK)
	return nil
}
