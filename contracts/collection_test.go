package contracts

import (
	"encoding/json"
	"testing"
)

func TestJobCountsCountEachStateAndShowEveryState(t *testing.T) {
	t.Parallel()
	var c JobCounts
	for _, s := range []JobState{JobStateEnabled, JobStateEnabled, JobStateDisabled, JobStateCompleted, "Unknown"} {
		c.Add(s)
	}
	data, err := json.Marshal(JobCollectionProperties{JobCounts: &c})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jobCounts":{"Enabled":2,"Disabled":1,"Completed":1,"Faulted":0}}`; string(data) != want {
		t.Errorf("%s, want %s", data, want)
	}
	if data, _ := json.Marshal(JobCollectionProperties{}); string(data) != `{}` {
		t.Errorf("properties without counts: %s", data)
	}
}

func TestAJobListShowsItsCountOnlyWhenSet(t *testing.T) {
	t.Parallel()
	zero := 0
	for _, tt := range []struct {
		list JobListResult
		want string
	}{
		{JobListResult{Value: []JobDefinition{}}, `{"value":[],"nextLink":null}`},
		{JobListResult{Value: []JobDefinition{}, Count: &zero}, `{"value":[],"nextLink":null,"count":0}`},
	} {
		if data, err := json.Marshal(tt.list); err != nil || string(data) != tt.want {
			t.Errorf("%s, %v; want %s", data, err, tt.want)
		}
	}
}
