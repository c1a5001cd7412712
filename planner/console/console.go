// Package console serves the web console: server-rendered pages over the
// REST API, beside it on the planner's listener. Every read and change a
// page makes is an API request made in process with the viewer's token
// (see client), so the console shows and does exactly what that token may.
package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/planner/api"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config configures the console.
type Config struct {
	// API is the REST API the console calls. Required.
	API *api.Server
	// EncryptionKey is the planner's key; the session cookies are sealed
	// with a key derived from it. Required.
	EncryptionKey []byte
	// NATS, when set, carries the results a job page shows as they
	// arrive. Defaults to none: the page shows what was there when it was
	// loaded.
	NATS *nats.Conn
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// Logger receives the console's faults. Defaults to slog.Default().
	Logger *slog.Logger
	// Login signs viewers in through an OpenID Connect provider when its
	// Client.ID is set. Defaults to none: viewers paste a token.
	Login OIDCLogin
}

// Console serves the console's pages.
type Console struct {
	cfg      Config
	sessions *sessions
	// provider is nil unless viewers may sign in through an identity
	// provider.
	provider *oidcLogin
	pages    map[string]*template.Template
	mux      *http.ServeMux
	cross    *http.CrossOriginProtection
	// done ends the live streams when the console stops.
	done     chan struct{}
	stopOnce sync.Once
}

// New returns the console.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil {
		return nil, errors.New("console: no API")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sess, err := newSessions(cfg.EncryptionKey, cfg.Now)
	if err != nil {
		return nil, err
	}
	provider, err := newOIDCLogin(cfg.Login, cfg.Now)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, sessions: sess, provider: provider, pages: pages, mux: http.NewServeMux(), cross: http.NewCrossOriginProtection(),
		done: make(chan struct{})}
	c.routes()
	return c, nil
}

// Stop ends the live streams, so that the listener can shut down.
func (c *Console) Stop() { c.stopOnce.Do(func() { close(c.done) }) }

// Serves reports whether path is one of the console's: the API serves
// every other.
func Serves(path string) bool {
	switch {
	case path == "/", path == "/login", path == "/logout", path == "/login/oidc", path == callbackPath:
		return true
	case strings.HasPrefix(path, "/static/"), strings.HasPrefix(path, "/c/"):
		return true
	}
	return false
}

// Beside returns a handler that serves the console's paths with c and
// every other with apiHandler.
func Beside(c *Console, apiHandler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Serves(r.URL.Path) {
			c.ServeHTTP(w, r)
			return
		}
		apiHandler.ServeHTTP(w, r)
	})
}

// ServeHTTP checks the Host, sets the headers every page carries, and
// serves the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if !c.cfg.API.ServesHost(r.Host) {
		http.Error(w, "the Host header names a host this console is not served as", http.StatusMisdirectedRequest)
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	files := http.FileServerFS(static)
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})))
	c.mux.HandleFunc("GET /{$}", c.page(c.overview))
	c.mux.HandleFunc("GET /login", c.loginForm)
	c.mux.HandleFunc("POST /login", c.form(c.login))
	c.mux.HandleFunc("POST /logout", c.form(c.logout))
	c.mux.HandleFunc("GET /login/oidc", c.startOIDC)
	c.mux.HandleFunc("GET "+callbackPath, c.finishOIDC)
	const coll = "/c/{sub}/{rg}/{coll}"
	const job = coll + "/jobs/{job}"
	c.mux.HandleFunc("GET "+coll, c.page(c.collection))
	c.mux.HandleFunc("POST "+coll+"/{verb}", c.form(c.collectionAction))
	c.mux.HandleFunc("GET "+coll+"/new", c.page(c.newJob))
	c.mux.HandleFunc("POST "+coll+"/check", c.form(c.check))
	c.mux.HandleFunc("POST "+coll+"/new", c.form(c.createJob))
	c.mux.HandleFunc("GET "+job, c.page(c.job))
	c.mux.HandleFunc("GET "+job+"/edit", c.page(c.editJob))
	c.mux.HandleFunc("POST "+job+"/edit", c.form(c.saveJob))
	c.mux.HandleFunc("GET "+job+"/delete", c.page(c.confirmDelete))
	c.mux.HandleFunc("POST "+job+"/{verb}", c.form(c.jobAction))
	c.mux.HandleFunc("GET "+job+"/events", c.events)
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, r, http.StatusNotFound, "error", &view{Title: "Not found", Error: "There is no page at " + r.URL.Path + "."})
	})
}
