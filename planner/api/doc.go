// Package api serves the REST API in the shape of Azure Scheduler's ARM API
// (api-version 2016-03-01): job collections and jobs under
// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler,
// with the subscription and resource group acting as namespaces. It reads
// and writes the job store; the planner's dispatcher follows the store.
//
// Each request is made by a principal found from its bearer token (flat
// tokens, a TokenFile, OIDC) and allowed by the principal's grants, a role
// over a scope (access.go); below operator, the Ceilings bound the quotas
// a principal may give itself.
package api
