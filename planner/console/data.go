package console

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/api"
)

// The API's answers as the console reads them: the Azure shapes with the
// API's extensions.

// collectionJSON is a collection as the API shows it.
type collectionJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Properties struct {
		contracts.JobCollectionProperties
		// JobCounts counts its jobs by state ($expand=jobCounts).
		JobCounts map[contracts.JobState]int `json:"jobCounts"`
	} `json:"properties"`
}

// Ref returns the collection's reference, from its id.
func (c collectionJSON) Ref() contracts.CollectionRef {
	ref, _ := parseCollectionID(c.ID)
	return ref
}

// Jobs is the number of its jobs.
func (c collectionJSON) Jobs() int {
	n := 0
	for _, v := range c.Properties.JobCounts {
		n += v
	}
	return n
}

// Count is the number of its jobs in state.
func (c collectionJSON) Count(state string) int {
	return c.Properties.JobCounts[contracts.JobState(state)]
}

// parseCollectionID reads "/subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{c}".
func parseCollectionID(id string) (contracts.CollectionRef, bool) {
	seg := strings.Split(strings.TrimPrefix(id, "/"), "/")
	if len(seg) < 8 {
		return contracts.CollectionRef{}, false
	}
	names := make([]string, len(seg))
	for i, s := range seg {
		n, err := url.PathUnescape(s)
		if err != nil {
			return contracts.CollectionRef{}, false
		}
		names[i] = n
	}
	return contracts.CollectionRef{Subscription: names[1], ResourceGroup: names[3], Collection: names[7]}, true
}

// parseJobID reads a job's id: a collection's id and "/jobs/{job}".
func parseJobID(id string) (contracts.JobRef, bool) {
	ref, ok := parseCollectionID(id)
	seg := strings.Split(strings.TrimPrefix(id, "/"), "/")
	if !ok || len(seg) < 10 {
		return contracts.JobRef{}, false
	}
	job, err := url.PathUnescape(seg[9])
	if err != nil {
		return contracts.JobRef{}, false
	}
	return ref.Job(job), true
}

// jobJSON is a job as the API shows it.
type jobJSON struct {
	ID         string
	Properties contracts.JobProperties
	// LastStatus is how its latest attempt ended (status.lastStatus).
	LastStatus string
	// SetSecrets are the secret fields that hold a value (setSecrets).
	SetSecrets []string
}

func (j *jobJSON) UnmarshalJSON(data []byte) error {
	var raw struct {
		ID         string          `json:"id"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	var extra struct {
		Status struct {
			LastStatus string `json:"lastStatus"`
		} `json:"status"`
		SetSecrets []string `json:"setSecrets"`
	}
	if len(raw.Properties) > 0 {
		if err := json.Unmarshal(raw.Properties, &j.Properties); err != nil {
			return err
		}
		if err := json.Unmarshal(raw.Properties, &extra); err != nil {
			return err
		}
	}
	j.ID, j.LastStatus, j.SetSecrets = raw.ID, extra.Status.LastStatus, extra.SetSecrets
	return nil
}

// Ref returns the job's reference.
func (j jobJSON) Ref() contracts.JobRef {
	ref, _ := parseJobID(j.ID)
	return ref
}

// Status returns the job's status (never nil).
func (j jobJSON) Status() contracts.JobStatus {
	if j.Properties.Status == nil {
		return contracts.JobStatus{}
	}
	return *j.Properties.Status
}

// ActionType is the type of its action.
func (j jobJSON) ActionType() string {
	if j.Properties.Action == nil {
		return ""
	}
	return string(j.Properties.Action.Type)
}

// Zone is the time zone of its recurrence, "" for UTC.
func (j jobJSON) Zone() string {
	if r := j.Properties.Recurrence; r != nil {
		return r.TimeZone
	}
	return ""
}

// jobList is a page of jobs.
type jobList struct {
	Value    []jobJSON `json:"value"`
	NextLink *string   `json:"nextLink"`
	Count    int       `json:"count"`
}

// upcomingRun is one run of GET …/upcoming.
type upcomingRun struct {
	ID         string    `json:"id"`
	Job        string    `json:"job"`
	Due        time.Time `json:"due"`
	TimeZone   string    `json:"timeZone"`
	LocalTime  string    `json:"localTime"`
	ActionType string    `json:"actionType"`
	Kind       string    `json:"kind"`
}

// Ref returns the run's job.
func (u upcomingRun) Ref() contracts.JobRef {
	ref, _ := parseJobID(u.ID)
	return ref
}

type upcomingList struct {
	From      time.Time     `json:"from"`
	To        time.Time     `json:"to"`
	Value     []upcomingRun `json:"value"`
	PerMinute []struct {
		Minute time.Time `json:"minute"`
		Count  int       `json:"count"`
	} `json:"perMinute"`
}

// historyList is a page of a job's history.
type historyList struct {
	Value []struct {
		Properties contracts.JobHistoryDefinitionProperties `json:"properties"`
	} `json:"value"`
	NextLink *string `json:"nextLink"`
}

// previewJSON is the answer of a preview. Occurrences tells, for a job
// with a flexible window or excluded calendars, of the occurrences skipped
// or moved and when each runs within its window.
type previewJSON struct {
	State       contracts.JobState      `json:"state"`
	Value       []time.Time             `json:"value"`
	Occurrences []api.PreviewOccurrence `json:"occurrences"`
}
