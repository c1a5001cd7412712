// Package store keeps job collections and jobs in the JetStream KV bucket
// that is their source of truth, with every secret of a job sealed at rest.
//
// A collection is stored under contracts.CollectionRef.KVKey,
// "c.<sub>.<rg>.<collection>", and a job under contracts.JobRef.KVKey,
// "j.<sub>.<rg>.<collection>.<job>". Keys fold case, as ARM names are
// case-insensitive; records keep the names as the user gave them. Records
// are JSON. A job's actions are sealed with internal/seal for the job's KV
// key before they are written, and opened when read, so a Job in memory
// holds its secrets in clear and the bucket never does.
//
// Creates and updates are compare-and-set on the KV revision, which is how
// several planners share one bucket without a leader: updates take the
// revision they read (ErrConflict when another writer came first), CreateJob
// keeps a collection's job quota exact under concurrent creates with one
// write per job, and no job outlives its collection (see Admission and
// DeleteCollection).
// Lists read one filtered key range through a single ordered consumer, never
// the whole bucket.
package store
