package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/api"
)

// The editor: a job's definition as JSON, checked as it is typed by the
// API's own decoder and validation (POST …/preview with the draft), and
// saved with PUT (a new job) or PATCH (a change, so that secrets the page
// never shows are kept).

type editorData struct {
	Ref contracts.CollectionRef
	// Job is the job's name; New tells a new job from a change.
	Job  string
	New  bool
	Body string
	// Check is what checking the draft found.
	Check checkResult
	// Secrets are the stored secrets a change keeps.
	Secrets []secretState
	Action  string
	Cancel  string
}

// checkResult is the verdict on a draft: faults at their fields, or the
// instants it would run at.
type checkResult struct {
	Checked bool
	Faults  []located
	Message string
	Next    []nextRun
	State   string
}

// located is a fault with the line of the draft its field is on.
type located struct {
	Field, Message string
	Line           int
}

func (c *Console) newJob(q *request) (string, *view, error) {
	ref := refOf(q.r)
	if c.role(q, ref) < api.RoleWriter {
		return "", nil, &apiFault{Status: http.StatusForbidden, Message: "The token does not allow creating jobs in " + ref.Collection + "."}
	}
	start := c.cfg.Now().UTC().Add(time.Hour).Truncate(time.Hour).Format(time.RFC3339)
	body := fmt.Sprintf(`{
  "properties": {
    "startTime": %q,
    "action": {
      "type": "Https",
      "request": {"uri": "https://example.com/", "method": "GET"},
      "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 3}
    },
    "recurrence": {"frequency": "Day", "interval": 1, "schedule": {"hours": [9], "minutes": [0]}, "timeZone": "UTC"}
  }
}`, start)
	d := editorData{Ref: ref, New: true, Body: body, Action: collectionHref(ref) + "/new", Cancel: collectionHref(ref)}
	return "editor", &view{Title: "New job", Crumbs: append(collectionCrumbs(ref), crumb{"New job", ""}), Data: d}, nil
}

func (c *Console) editJob(q *request) (string, *view, error) {
	ref := jobRefOf(q.r)
	var j jobJSON
	if err := q.api.get(q.ctx(), jobPath(ref), nil, &j); err != nil {
		return "", nil, err
	}
	d := editorData{Ref: ref.CollectionRef(), Job: ref.Job, Body: definitionJSON(j.Properties), Secrets: setOnly(secretsOf(j)),
		Action: jobHref(ref) + "/edit", Cancel: jobHref(ref)}
	crumbs := append(collectionCrumbs(ref.CollectionRef()), crumb{ref.Job, jobHref(ref)}, crumb{"Edit", ""})
	return "editor", &view{Title: "Edit " + ref.Job, Crumbs: crumbs, Data: d}, nil
}

func setOnly(s []secretState) []secretState {
	return slices.DeleteFunc(s, func(s secretState) bool { return !s.Set })
}

// check answers the editor's request to check a draft (htmx) with the
// verdict alone.
func (c *Console) check(q *request) (string, *view, error) {
	ref := refOf(q.r)
	name := strings.TrimSpace(q.r.PostForm.Get("job"))
	d := editorData{Ref: ref, Job: name, New: q.r.PostForm.Get("new") == "true", Body: q.r.PostForm.Get("body")}
	d.Check = c.checkDraft(q, ref, d)
	return "check", &view{Data: d}, nil
}

// checkDraft checks a draft through the API's preview of a definition.
func (c *Console) checkDraft(q *request, ref contracts.CollectionRef, d editorData) checkResult {
	res := checkResult{Checked: true}
	var draft map[string]any
	if err := decodeDraft(d.Body, &draft); err != nil {
		res.Faults = []located{{Field: "JSON", Message: err.Error(), Line: syntaxLine(d.Body, err)}}
		return res
	}
	job := d.Job
	if job == "" {
		res.Faults = []located{{Field: "name", Message: "the job needs a name"}}
		return res
	}
	var kept []string
	if !d.New {
		// A change is checked as it will be saved: the stored job with
		// the draft merged in, its secrets kept.
		var stored jobJSON
		if err := q.api.get(q.ctx(), jobPath(ref.Job(job)), nil, &stored); err == nil {
			for _, s := range setOnly(secretsOf(stored)) {
				kept = append(kept, "properties."+s.Field)
			}
		}
	}
	var pv previewJSON
	err := q.api.do(q.ctx(), http.MethodPost, jobPath(ref.Job(job))+"/preview", url.Values{"count": {"5"}}, draft, &pv)
	var f *apiFault
	switch {
	case err == nil:
		zone, window := "", ""
		if p, ok := draft["properties"].(map[string]any); ok {
			if r, ok := p["recurrence"].(map[string]any); ok {
				zone, _ = r["timeZone"].(string)
				window, _ = r["flexibleWindow"].(string)
			}
		}
		res.Next, res.State = nextRuns(pv, zone, window), string(pv.State)
	case errors.As(err, &f):
		for _, ff := range f.Details {
			if slices.Contains(kept, ff.Target) {
				continue // a secret the change keeps
			}
			res.Faults = append(res.Faults, located{Field: ff.Target, Message: ff.Message, Line: fieldLine(d.Body, ff.Target)})
		}
		if len(f.Details) == 0 {
			res.Message = f.Message
		}
		if len(res.Faults) == 0 && res.Message == "" {
			res.Message = "Valid; the stored secrets are kept."
		}
	default:
		res.Message = "The draft could not be checked now."
	}
	return res
}

// decodeDraft reads a draft's JSON.
func decodeDraft(body string, out *map[string]any) error {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("there is more after the JSON object")
	}
	return nil
}

func (c *Console) createJob(q *request) (string, *view, error) {
	ref := refOf(q.r)
	name := strings.TrimSpace(q.r.PostForm.Get("job"))
	d := editorData{Ref: ref, Job: name, New: true, Body: q.r.PostForm.Get("body"), Action: collectionHref(ref) + "/new", Cancel: collectionHref(ref)}
	crumbs := append(collectionCrumbs(ref), crumb{"New job", ""})
	var draft map[string]any
	if err := decodeDraft(d.Body, &draft); err != nil || name == "" {
		d.Check = c.checkDraft(q, ref, d)
		return "editor", &view{Title: "New job", Crumbs: crumbs, Error: "The job was not created.", Data: d}, nil
	}
	// PUT with If-None-Match: a name already taken is not replaced.
	err := q.api.do(q.ctx(), http.MethodPut, jobPath(ref.Job(name)), nil, draft, nil)
	if e := c.saveFault(q, err, &d); e != nil || d.Check.Checked {
		return "editor", &view{Title: "New job", Crumbs: crumbs, Error: "The job was not created.", Data: d}, e
	}
	return redirect(q, jobHref(ref.Job(name))+"?done=created")
}

func (c *Console) saveJob(q *request) (string, *view, error) {
	ref := jobRefOf(q.r)
	d := editorData{Ref: ref.CollectionRef(), Job: ref.Job, Body: q.r.PostForm.Get("body"), Action: jobHref(ref) + "/edit", Cancel: jobHref(ref)}
	crumbs := append(collectionCrumbs(ref.CollectionRef()), crumb{ref.Job, jobHref(ref)}, crumb{"Edit", ""})
	var stored jobJSON
	if err := q.api.get(q.ctx(), jobPath(ref), nil, &stored); err != nil {
		return "", nil, err
	}
	d.Secrets = setOnly(secretsOf(stored))
	var draft map[string]any
	if err := decodeDraft(d.Body, &draft); err != nil {
		d.Check = c.checkDraft(q, ref.CollectionRef(), d)
		return "editor", &view{Title: "Edit " + ref.Job, Crumbs: crumbs, Error: "The job was not saved.", Data: d}, nil
	}
	var before map[string]any
	_ = decodeDraft(definitionJSON(stored.Properties), &before)
	patch := mergePatch(before, draft)
	if patch == nil {
		return redirect(q, jobHref(ref))
	}
	err := q.api.do(q.ctx(), http.MethodPatch, jobPath(ref), nil, patch, nil)
	if e := c.saveFault(q, err, &d); e != nil || d.Check.Checked {
		return "editor", &view{Title: "Edit " + ref.Job, Crumbs: crumbs, Error: "The job was not saved.", Data: d}, e
	}
	return redirect(q, jobHref(ref)+"?done=saved")
}

// saveFault puts a refused save's faults in the editor (a 400 or 409), or
// returns the error a page shows.
func (c *Console) saveFault(q *request, err error, d *editorData) error {
	if err == nil {
		return nil
	}
	var f *apiFault
	if !errors.As(err, &f) || (f.Status != http.StatusBadRequest && f.Status != http.StatusConflict && f.Status != http.StatusForbidden) {
		return err
	}
	d.Check = checkResult{Checked: true, Message: f.Message}
	for _, ff := range f.Details {
		d.Check.Faults = append(d.Check.Faults, located{Field: ff.Target, Message: ff.Message, Line: fieldLine(d.Body, ff.Target)})
	}
	return nil
}

// mergePatch returns the JSON merge patch (RFC 7396) that turns before
// into after; nil when they are equal.
func mergePatch(before, after map[string]any) map[string]any {
	out := map[string]any{}
	for k, av := range after {
		bv, ok := before[k]
		switch {
		case !ok:
			out[k] = av
		case reflect.DeepEqual(bv, av):
		default:
			bm, bIsMap := bv.(map[string]any)
			am, aIsMap := av.(map[string]any)
			if bIsMap && aIsMap {
				if p := mergePatch(bm, am); p != nil {
					out[k] = p
				}
				continue
			}
			out[k] = av
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out[k] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// syntaxLine returns the line of a JSON syntax error, 0 when unknown.
func syntaxLine(body string, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return lineAt(body, se.Offset)
	case errors.As(err, &te):
		return lineAt(body, te.Offset)
	}
	return 0
}

// valueStart returns the offset of the next value at or after offset:
// past blanks and the separators before it.
func valueStart(body string, offset int64) int64 {
	for offset < int64(len(body)) && strings.IndexByte(" \t\r\n,:", body[offset]) >= 0 {
		offset++
	}
	return offset
}

func lineAt(body string, offset int64) int {
	offset = min(max(offset, 0), int64(len(body)))
	return 1 + strings.Count(body[:offset], "\n")
}

// fieldLine returns the line of the draft where field (a path such as
// "properties.action.request.uri" or "properties.recurrence.schedule.hours[1]")
// is, or the line of its nearest parent there; 0 when none is.
func fieldLine(body, field string) int {
	path := splitPath(field)
	dec := json.NewDecoder(strings.NewReader(body))
	best := 0
	var walk func(depth int) bool
	// walk reads one value; at depth, path[:depth] matched.
	walk = func(depth int) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				keyTok, err := dec.Token()
				if err != nil {
					return false
				}
				key, _ := keyTok.(string)
				if depth >= 0 && depth < len(path) && strings.EqualFold(key, path[depth]) {
					best = lineAt(body, dec.InputOffset())
					if !walk(depth + 1) {
						return false
					}
					continue
				}
				if !walk(-1) {
					return false
				}
			}
			_, err = dec.Token()
			return err == nil
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				next := -1
				if depth >= 0 && depth < len(path) && path[depth] == strconv.Itoa(i) {
					best = lineAt(body, valueStart(body, dec.InputOffset()))
					next = depth + 1
				}
				if !walk(next) {
					return false
				}
			}
			_, err = dec.Token()
			return err == nil
		}
		return true
	}
	walk(0)
	return best
}

// splitPath splits "a.b[2].c" into a, b, 2, c.
func splitPath(field string) []string {
	field = strings.ReplaceAll(strings.ReplaceAll(field, "[", "."), "]", "")
	var out []string
	for _, p := range strings.Split(field, ".") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
