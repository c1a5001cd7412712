package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/api"
)

// view is what every page's template receives.
type view struct {
	Title string
	// Crumbs lead from the overview to the page.
	Crumbs []crumb
	// CSRF goes in every form of the page.
	CSRF string
	// SignedIn: the viewer gave a token; TokenRequired: the API asks for one.
	SignedIn, TokenRequired bool
	// Flash says what the last action did; Error what went wrong.
	Flash, Error string
	// Data is the page's own.
	Data any
}

type crumb struct{ Name, Href string }

// request is one page request: the viewer's session and API client.
type request struct {
	w    http.ResponseWriter
	r    *http.Request
	sess session
	api  *client
}

func (q *request) ctx() context.Context { return q.r.Context() }

// pageFunc renders a page: its template and view, or an error.
type pageFunc func(q *request) (string, *view, error)

// templateFuncs are the helpers of the templates.
var templateFuncs = template.FuncMap{
	"utc":      formatUTC,
	"utcp":     func(t *time.Time) string { return formatUTC(deref(t)) },
	"inZone":   formatInZone,
	"lower":    strings.ToLower,
	"jobHref":  jobHref,
	"collHref": collectionHref,
	"add":      func(a, b int) int { return a + b },
	"deref":    deref,
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// formatUTC writes an instant in UTC, naming the zone; "—" for none.
func formatUTC(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

// formatInZone writes an instant as wall-clock time in zone (an IANA
// name), with its offset and abbreviation.
func formatInZone(t time.Time, zone string) string {
	loc, err := contracts.LoadZone(zone)
	if err != nil || zone == "" {
		return formatUTC(t)
	}
	return t.In(loc).Format("2006-01-02 15:04:05 -07:00 MST")
}

// collectionHref is the console path of a collection's page.
func collectionHref(ref contracts.CollectionRef) string {
	return "/c/" + url.PathEscape(ref.Subscription) + "/" + url.PathEscape(ref.ResourceGroup) + "/" + url.PathEscape(ref.Collection)
}

// jobHref is the console path of a job's page.
func jobHref(ref contracts.JobRef) string {
	return collectionHref(ref.CollectionRef()) + "/jobs/" + url.PathEscape(ref.Job)
}

// parsePages parses each page's template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/_*.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		pages[base] = t
	}
	return pages, nil
}

// render writes a page, or its fragment "content" alone when htmx asks
// for part of the page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	t, ok := c.pages[name]
	if !ok {
		c.cfg.Logger.Error("console: no template", slog.String("template", name))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	root := "layout.html"
	if fragment := r.Header.Get("HX-Target"); fragment != "" && t.Lookup("fragment:"+fragment) != nil {
		root = "fragment:" + fragment
	}
	if err := t.ExecuteTemplate(&buf, root, v); err != nil {
		c.cfg.Logger.Error("console: rendering a page", slog.String("template", name), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "HX-Target")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// session returns r's session, starting one (without a token) when it has
// none.
func (c *Console) session(w http.ResponseWriter, r *http.Request) session {
	sess, ok := c.sessions.read(r)
	if !ok {
		sess = c.sessions.fresh("")
		c.sessions.write(w, r, sess)
	}
	return sess
}

// newRequest returns the request of r in session sess.
func (c *Console) newRequest(w http.ResponseWriter, r *http.Request, sess session) *request {
	return &request{w: w, r: r, sess: sess, api: &client{api: c.cfg.API, host: r.Host, token: sess.Token}}
}

// page serves a page with fn, asking the viewer to sign in first where the
// API wants a token.
func (c *Console) page(fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := c.session(w, r)
		if c.cfg.API.RequiresToken() && sess.Token == "" {
			c.toLogin(w, r)
			return
		}
		q := c.newRequest(w, r, sess)
		name, v, err := fn(q)
		if name == "" && err == nil {
			return // fn answered itself (a redirect)
		}
		c.finish(q, name, v, err)
	}
}

// form serves a form's POST with fn: it must come from this console's own
// page (same origin, the session's CSRF value).
func (c *Console) form(fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.cross.Check(r); err != nil {
			c.render(w, r, http.StatusForbidden, "error", &view{Title: "Refused", Error: "A form sent from another site is refused."})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			c.render(w, r, http.StatusBadRequest, "error", &view{Title: "Bad request", Error: "The form could not be read: " + err.Error()})
			return
		}
		sess, ok := c.sessions.read(r)
		if !ok || !csrfMatches(sess, r.PostForm.Get("csrf")) {
			c.render(w, r, http.StatusForbidden, "error", &view{Title: "Refused",
				Error: "This form did not come from a page of this console, or its session has ended. Reload the page and try again."})
			return
		}
		q := c.newRequest(w, r, sess)
		name, v, err := fn(q)
		if name == "" && err == nil {
			return
		}
		c.finish(q, name, v, err)
	}
}

// finish renders a page's view, or the error its API calls met.
func (c *Console) finish(q *request, name string, v *view, err error) {
	w, r := q.w, q.r
	if err == nil {
		v.CSRF, v.SignedIn, v.TokenRequired = q.sess.CSRF, q.sess.Token != "", c.cfg.API.RequiresToken()
		c.render(w, r, http.StatusOK, name, v)
		return
	}
	var f *apiFault
	if !errors.As(err, &f) {
		c.cfg.Logger.Error("console: serving a page", slog.String("path", contracts.Abbreviate(r.URL.Path)), slog.String("error", err.Error()))
		c.render(w, r, http.StatusInternalServerError, "error", &view{Title: "Error", Error: "The page could not be shown; the planner's log says why."})
		return
	}
	if f.Status == http.StatusUnauthorized {
		clearSession(w, r)
		c.toLogin(w, r)
		return
	}
	ev := &view{Title: http.StatusText(f.Status), Error: f.Message, CSRF: q.sess.CSRF,
		SignedIn: q.sess.Token != "", TokenRequired: c.cfg.API.RequiresToken()}
	c.render(w, r, f.Status, "error", ev)
}

// toLogin sends the viewer to the sign-in page, to come back to r's page.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request) {
	next := "/"
	if r.Method == http.MethodGet {
		next = r.URL.RequestURI()
	}
	if r.Header.Get("HX-Request") != "" {
		w.Header().Set("HX-Redirect", "/login?next="+url.QueryEscape(next))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/login?next="+url.QueryEscape(next), http.StatusSeeOther)
}

// redirect answers a form by sending the viewer to a page.
func redirect(q *request, to string) (string, *view, error) {
	http.Redirect(q.w, q.r, to, http.StatusSeeOther)
	return "", nil, nil
}

// localPath returns next when it is a path of this console, "/" otherwise:
// a sign-in never sends the viewer to another site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// role is what the viewer may do in a collection.
func (c *Console) role(q *request, ref contracts.CollectionRef) api.Role {
	role, err := c.cfg.API.RoleAt(q.ctx(), q.sess.Token, ref)
	if err != nil {
		return 0
	}
	return role
}
