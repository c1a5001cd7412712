package contracts

// JobCollectionDefinition is a job collection in its ARM envelope.
type JobCollectionDefinition struct {
	ID         string                   `json:"id,omitempty"`
	Type       string                   `json:"type,omitempty"`
	Name       string                   `json:"name,omitempty"`
	Location   string                   `json:"location,omitempty"`
	Tags       map[string]string        `json:"tags,omitempty"`
	Properties *JobCollectionProperties `json:"properties,omitempty"`
}

// JobCollectionProperties are a collection's plan, state and quota.
type JobCollectionProperties struct {
	Sku   *Sku                `json:"sku,omitempty"`
	State JobCollectionState  `json:"state,omitempty"`
	Quota *JobCollectionQuota `json:"quota,omitempty"`
	// JobCounts counts the collection's jobs by state; shown only when
	// asked for ($expand=jobCounts, an extension), never stored or read
	// from a definition.
	JobCounts *JobCounts `json:"jobCounts,omitempty"`
}

// JobCounts is how many jobs of a collection are in each state.
type JobCounts struct {
	Enabled   int `json:"Enabled"`
	Disabled  int `json:"Disabled"`
	Completed int `json:"Completed"`
	Faulted   int `json:"Faulted"`
}

// Add counts one job in state s; a state of no job is not counted.
func (c *JobCounts) Add(s JobState) {
	switch s {
	case JobStateEnabled:
		c.Enabled++
	case JobStateDisabled:
		c.Disabled++
	case JobStateCompleted:
		c.Completed++
	case JobStateFaulted:
		c.Faulted++
	}
}

// Sku names a collection's plan.
type Sku struct {
	Name SkuName `json:"name,omitempty"`
}

// JobCollectionQuota limits the jobs of a collection. A nil field takes the
// default of the collection's plan.
type JobCollectionQuota struct {
	MaxJobCount      *int              `json:"maxJobCount,omitempty"`
	MaxJobOccurrence *int              `json:"maxJobOccurrence,omitempty"`
	MaxRecurrence    *JobMaxRecurrence `json:"maxRecurrence,omitempty"`
}

// JobMaxRecurrence is the shortest gap allowed between two occurrences of a
// job, as a frequency and interval.
type JobMaxRecurrence struct {
	Frequency Frequency `json:"frequency,omitempty"`
	// Interval is the number of frequency units. Nil means 1.
	Interval *int `json:"interval,omitempty"`
}
