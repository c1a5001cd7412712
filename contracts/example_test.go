package contracts_test

import (
	"encoding/json"
	"fmt"

	"github.com/jobscheduler/scheduler/contracts"
)

// A bare job, in the casing users really send, comes out as the ARM envelope
// with canonical names and values.
func ExampleDecodeJob() {
	job, errs := contracts.DecodeJob([]byte(`{
		"StartTime": "2026-01-05T08:00Z",
		"action": {"type": "http", "request": {"uri": "https://example.com/report", "method": "POST"}},
		"recurrence": {"frequency": "WEEK", "schedule": {"hours": 5, "weekDays": "monday"}}
	}`))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	out, _ := json.MarshalIndent(contracts.JobDefinition{Properties: job.Properties}, "", "  ")
	fmt.Printf("prefix %q\n%s\n", job.Prefix, out)
	// Output:
	// prefix ""
	// {
	//   "properties": {
	//     "startTime": "2026-01-05T08:00:00Z",
	//     "action": {
	//       "type": "Http",
	//       "request": {
	//         "uri": "https://example.com/report",
	//         "method": "POST"
	//       }
	//     },
	//     "recurrence": {
	//       "frequency": "Week",
	//       "schedule": {
	//         "weekDays": [
	//           "Monday"
	//         ],
	//         "hours": [
	//           5
	//         ]
	//       }
	//     }
	//   }
	// }
}
