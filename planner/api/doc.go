// Package api serves the REST API in the shape of Azure Scheduler's ARM API
// (api-version 2016-03-01): job collections and jobs under
// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler,
// with the subscription and resource group acting as namespaces. It reads
// and writes the job store; the planner's dispatcher follows the store.
package api
