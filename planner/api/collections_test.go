package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

// allCollections lists the collections of every subscription.
const allCollections = "/providers/Microsoft.Scheduler/jobCollections"

// noGrants authenticates one token as a principal without grants, as an
// OpenID Connect token without a scopes claim is.
type noGrants string

func (n noGrants) Authenticate(_ context.Context, token string) (Principal, error) {
	if token != string(n) {
		return Principal{}, ErrUnknownToken
	}
	return Principal{Name: "oidc:nobody"}, nil
}

// collectionIDs returns the ids of a listing of collections.
func collectionIDs(t *testing.T, r response) []string {
	t.Helper()
	ids := []string{}
	for _, v := range r.json(t)["value"].([]any) {
		ids = append(ids, v.(map[string]any)["id"].(string))
	}
	return ids
}

func TestListingEveryCollection(t *testing.T) {
	t.Parallel()
	nobody := "nobody-" + strings.Repeat("n", MinTokenLength)
	b := setupAccess(t, Config{Authenticators: []Authenticator{noGrants(nobody)}}, operator, readerA, writerColl)
	for _, c := range []string{collections("subB", "rg") + "/c1", collections("subA", "rg") + "/c2", collections("subA", "other") + "/c3", collections("subA", "rg") + "/c1"} {
		b.mustAs(t, operator, http.StatusCreated, "PUT", c, `{"properties": {}}`)
	}

	t.Run("every subscription's collections, sorted by subscription, resource group and name", func(t *testing.T) {
		got := collectionIDs(t, b.mustAs(t, operator, http.StatusOK, "GET", allCollections, ""))
		want := []string{collections("subA", "other") + "/c3", collections("subA", "rg") + "/c1", collections("subA", "rg") + "/c2", collections("subB", "rg") + "/c1"}
		if !slices.Equal(got, want) {
			t.Errorf("listing %q, want %q", got, want)
		}
	})
	t.Run("a scoped token sees only what it may read", func(t *testing.T) {
		got := collectionIDs(t, b.mustAs(t, readerA, http.StatusOK, "GET", allCollections, ""))
		if want := []string{collections("subA", "other") + "/c3", collections("subA", "rg") + "/c1", collections("subA", "rg") + "/c2"}; !slices.Equal(got, want) {
			t.Errorf("a reader of subA lists %q, want %q", got, want)
		}
		got = collectionIDs(t, b.mustAs(t, writerColl, http.StatusOK, "GET", strings.ToLower(allCollections), ""))
		if want := []string{collections("subA", "rg") + "/c1"}; !slices.Equal(got, want) {
			t.Errorf("a writer of c1 lists %q, want %q", got, want)
		}
	})
	t.Run("a token that may read nothing gets an empty list, not 403", func(t *testing.T) {
		r := b.do(t, "GET", allCollections, "", "Authorization", "Bearer "+nobody)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"value":[]`) {
			t.Errorf("status %d: %s", r.status, r.body)
		}
		if r := b.do(t, "GET", allCollections, ""); r.status != http.StatusUnauthorized {
			t.Errorf("without a token: status %d", r.status)
		}
	})
	t.Run("only GET is served", func(t *testing.T) {
		b.mustAs(t, operator, http.StatusMethodNotAllowed, "POST", allCollections, "")
	})
}

func TestJobCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", plainCollection)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/empty", plainCollection)
	for _, j := range []struct{ name, state string }{{"on1", ""}, {"on2", "Enabled"}, {"off", "Disabled"}, {"done", ""}} {
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/"+j.name, listedJob("Http", j.state, "2016-04-01T00:00:00Z"))
	}
	ctx := context.Background()
	j, err := b.store.GetJob(ctx, contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "done"})
	if err != nil {
		t.Fatal(err)
	}
	j.Properties.State = contracts.JobStateCompleted
	if _, err := b.store.UpdateJob(ctx, j, j.Revision); err != nil {
		t.Fatal(err)
	}
	const jcCounts = `"jobCounts":{"Enabled":2,"Disabled":1,"Completed":1,"Faulted":0}`
	const emptyCounts = `"jobCounts":{"Enabled":0,"Disabled":0,"Completed":0,"Faulted":0}`

	t.Run("a collection with $expand=jobCounts counts its jobs by state", func(t *testing.T) {
		if r := b.mustDo(t, http.StatusOK, "GET", base+"/jc?$expand=JobCounts", ""); !strings.Contains(string(r.body), jcCounts) {
			t.Errorf("body %s", r.body)
		}
		if r := b.mustDo(t, http.StatusOK, "GET", base+"/empty?$expand=jobCounts", ""); !strings.Contains(string(r.body), emptyCounts) {
			t.Errorf("body %s", r.body)
		}
	})
	t.Run("every listing counts each collection's jobs", func(t *testing.T) {
		for _, path := range []string{base, "/subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections", allCollections} {
			s := string(b.mustDo(t, http.StatusOK, "GET", path+"?$expand=jobCounts", "").body)
			if !strings.Contains(s, jcCounts) || !strings.Contains(s, emptyCounts) {
				t.Errorf("GET %s: %s", path, s)
			}
		}
	})
	t.Run("without $expand nothing changes", func(t *testing.T) {
		for _, path := range []string{base + "/jc", base, allCollections} {
			if s := string(b.mustDo(t, http.StatusOK, "GET", path, "").body); strings.Contains(s, "jobCounts") {
				t.Errorf("GET %s: %s", path, s)
			}
		}
	})
	t.Run("jobCounts in a definition is neither stored nor shown", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "PATCH", base+"/jc", `{"properties": {"jobCounts": {"Enabled": 99}}}`)
		if s := string(b.mustDo(t, http.StatusOK, "GET", base+"/jc", "").body); strings.Contains(s, "jobCounts") {
			t.Errorf("GET: %s", s)
		}
	})
	t.Run("another $expand is 400 naming the parameter", func(t *testing.T) {
		for _, path := range []string{base + "/jc", base, allCollections} {
			r := b.mustDo(t, http.StatusBadRequest, "GET", path+"?$expand=tags", "")
			if r.errorCode(t) != codeInvalidQuery || !strings.Contains(string(r.body), "$expand") {
				t.Errorf("GET %s: %s", path, r.body)
			}
		}
	})
}
