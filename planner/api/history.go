package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/jobscheduler/scheduler/contracts"
)

// listHistory serves GET …/jobs/{job}/history: the job's execution
// attempts, newest first, paged with $top and $skip, filtered with
// $filter=status eq Completed (or Failed, Postponed).
func (s *Server) listHistory(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	p, e := parsePage(r.URL.Query(), "status", contracts.ExecutionStatuses)
	if e != nil {
		return e
	}
	ctx := r.Context()
	j, err := s.store.GetJob(ctx, ref)
	if err != nil {
		return storeError(err, jobWhat(ref))
	}
	var entries []contracts.HistoryEntry
	if s.cfg.History != nil {
		entries, err = bulk(ctx, func(ctx context.Context) ([]contracts.HistoryEntry, error) { return s.cfg.History.List(ctx, j.Ref) })
		if err != nil {
			return storeError(err, "the history of "+jobWhat(ref))
		}
	}
	if p.filter != "" {
		entries = slices.DeleteFunc(entries, func(h contracts.HistoryEntry) bool { return string(h.Status) != p.filter })
	}
	from, to := p.window(len(entries))
	out := contracts.JobHistoryListResult{Value: make([]contracts.JobHistoryDefinition, 0, to-from), NextLink: s.nextLink(r, p, len(entries))}
	for _, h := range entries[from:to] {
		out.Value = append(out.Value, contracts.JobHistoryDefinition{
			ID:         jobID(j.Ref) + "/history/" + h.ID,
			Type:       contracts.JobHistoryResourceType,
			Name:       j.Ref.Collection + "/" + j.Ref.Job + "/" + h.ID,
			Properties: h.Properties(),
		})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
