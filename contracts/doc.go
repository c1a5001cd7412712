// Package contracts defines the wire: job collections, jobs and job history in
// the shape of the Azure Scheduler REST API (api-version 2016-03-01), and the
// execution, result and history messages the planner, workers and history
// consumer exchange.
//
// It is a leaf package: it imports only the standard library and nothing else
// of this module, so every other package can depend on it.
//
// Input is forgiving, as the original service was: property names and enum
// values in any case, schedule elements as one value or an array, retry
// intervals as ISO 8601 durations or .NET TimeSpan text, and a job given either
// as the ARM envelope {"properties": {...}} or as the bare properties object.
// Output is always the ARM envelope with canonical enum values.
package contracts
