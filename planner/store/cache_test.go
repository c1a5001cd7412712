package store

import (
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestRecordCacheKeepsARevisionAndHandsOutCopies(t *testing.T) {
	c := newRecordCache(10)
	r := jobRecord{Properties: contracts.JobProperties{State: contracts.JobStateEnabled,
		Action: &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "https://a/"}}}}
	c.put("k", 3, r)
	r.Properties.Action.Request.URI = "https://changed-by-the-writer/"
	if _, ok := c.get("k", 4, true); ok {
		t.Fatal("another revision was served from the cache")
	}
	got, ok := c.get("k", 3, true)
	if !ok || got.Properties.Action.Request.URI != "https://a/" {
		t.Fatalf("got %+v, %v: the cache shares the record its writer keeps", got.Properties.Action.Request, ok)
	}
	got.Properties.Action.Request.URI = "https://changed-by-a-reader/"
	if again, _ := c.get("k", 3, false); again.Properties.Action.Request.URI != "https://a/" {
		t.Fatal("a reader's change of its own copy reached the cache")
	}
}

func TestRecordCacheStaysWithinItsSize(t *testing.T) {
	c := newRecordCache(10)
	for i := range 25 {
		c.put(string(rune('a'+i)), 1, jobRecord{})
	}
	if n := len(c.m); n > 10 {
		t.Fatalf("%d records kept, the bound is 10", n)
	}
	if _, ok := c.get(string(rune('a'+24)), 1, false); !ok {
		t.Fatal("the latest record was dropped")
	}
}
