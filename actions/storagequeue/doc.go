// Package storagequeue performs StorageQueue actions: it puts one message on
// an Azure Storage queue, authenticated by the job's SAS token, wrapped in
// the XML envelope the original service wrote, and reports how it went.
//
// The queue is reached at Config.EndpointTemplate with the job's storage
// account put in place of "{account}": https://{account}.queue.core.windows.net
// in Azure, or a path-style URL such as http://127.0.0.1:10001/{account} for
// Azurite. The account name must be a valid storage account name (3 to 24
// lowercase letters and digits), so an action can only reach hosts the
// template allows.
//
// A Sender is built once per worker and shared by every execution. It keeps
// one queue client per queue URL and SAS token (at most Config.MaxClients,
// the least recently used dropped past that), all over one HTTP transport,
// so that connections are reused across executions. The storage client's
// own retries are off: the job's retry policy decides whether an attempt
// is repeated, and each attempt shows in job history.
//
// The SAS token never appears in an Outcome: texts are built from the HTTP
// status and the storage error code, and any text taken from the service or
// the network is scrubbed of the token and its signature.
package storagequeue
