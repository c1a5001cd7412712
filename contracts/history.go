package contracts

import "time"

// JobHistoryDefinition is one execution attempt in its ARM envelope.
type JobHistoryDefinition struct {
	ID         string                         `json:"id,omitempty"`
	Type       string                         `json:"type,omitempty"`
	Name       string                         `json:"name,omitempty"`
	Properties JobHistoryDefinitionProperties `json:"properties"`
}

// JobHistoryDefinitionProperties describe one execution attempt. A completed
// attempt has no Status, as in the original service; a failed one has
// StatusFailed.
type JobHistoryDefinitionProperties struct {
	StartTime             *time.Time      `json:"startTime,omitempty"`
	EndTime               *time.Time      `json:"endTime,omitempty"`
	ExpectedExecutionTime *time.Time      `json:"expectedExecutionTime,omitempty"`
	ActionName            ActionName      `json:"actionName,omitempty"`
	Status                ExecutionStatus `json:"status,omitempty"`
	Message               string          `json:"message,omitempty"`
	// RetryCount is the attempt within the occurrence, 0 for the first.
	RetryCount int `json:"retryCount"`
	// RepeatCount is the 1-based occurrence number.
	RepeatCount int `json:"repeatCount"`
}

// List results of the API. NextLink is null when there are no more pages.
type (
	JobCollectionListResult struct {
		Value    []JobCollectionDefinition `json:"value"`
		NextLink *string                   `json:"nextLink"`
	}
	JobListResult struct {
		Value    []JobDefinition `json:"value"`
		NextLink *string         `json:"nextLink"`
		// Count is the number of jobs the filter and search keep, over
		// every page; only when asked for with $count=true (an
		// extension).
		Count *int `json:"count,omitempty"`
	}
	JobHistoryListResult struct {
		Value    []JobHistoryDefinition `json:"value"`
		NextLink *string                `json:"nextLink"`
	}
)
