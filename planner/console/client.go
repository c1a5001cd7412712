package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/jobscheduler/scheduler/contracts"
)

// apiVersion is the version every call of the console asks for.
const apiVersion = "2016-03-01"

// client makes the viewer's calls to the REST API, in process: each is a
// request ServeHTTP serves as it serves one from outside, with the
// viewer's token, so the console can do nothing the token could not.
type client struct {
	api http.Handler
	// host is the Host of the viewer's request, which the API checks as
	// it checks any request's.
	host  string
	token string
}

// apiFault is an error answer of the API: its status and ARM error body.
type apiFault struct {
	Status  int
	Code    string
	Message string
	Details []fieldFault
}

// fieldFault is one detail of an ARM error: a field and what is wrong.
type fieldFault struct {
	Code    string `json:"code"`
	Target  string `json:"target"`
	Message string `json:"message"`
}

func (f *apiFault) Error() string { return fmt.Sprintf("%d %s: %s", f.Status, f.Code, f.Message) }

// recorder keeps the answer of one call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// do sends one request to the API and decodes a 2xx body into out (when
// not nil); any other answer is an *apiFault.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body any, out any) error {
	if query == nil {
		query = url.Values{}
	}
	query.Set("api-version", apiVersion)
	var reader io.Reader = http.NoBody
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, path+"?"+query.Encode(), reader)
	if err != nil {
		return err
	}
	req.Host = c.host
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := &recorder{header: http.Header{}}
	c.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 200 && rec.status < 300 {
		if out == nil || rec.body.Len() == 0 {
			return nil
		}
		if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
			return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
		}
		return nil
	}
	var e struct {
		Error struct {
			Code    string       `json:"code"`
			Message string       `json:"message"`
			Details []fieldFault `json:"details"`
		} `json:"error"`
	}
	f := &apiFault{Status: rec.status}
	if json.Unmarshal(rec.body.Bytes(), &e) == nil {
		f.Code, f.Message, f.Details = e.Error.Code, e.Error.Message, e.Error.Details
	} else {
		f.Message = strings.TrimSpace(rec.body.String())
	}
	return f
}

// get reads path into out.
func (c *client) get(ctx context.Context, path string, query url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, query, nil, out)
}

// collectionPath returns the API path of a collection, its names escaped.
func collectionPath(ref contracts.CollectionRef) string {
	return "/subscriptions/" + url.PathEscape(ref.Subscription) + "/resourceGroups/" + url.PathEscape(ref.ResourceGroup) +
		"/providers/Microsoft.Scheduler/jobCollections/" + url.PathEscape(ref.Collection)
}

// jobPath returns the API path of a job.
func jobPath(ref contracts.JobRef) string {
	return collectionPath(ref.CollectionRef()) + "/jobs/" + url.PathEscape(ref.Job)
}
