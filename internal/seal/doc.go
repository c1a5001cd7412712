// Package seal encrypts secrets at rest with AES-256-GCM, so that SAS tokens,
// Service Bus keys, passwords, client certificates and OAuth secrets never
// sit in the KV bucket or in execution messages in clear.
//
// A sealed value is text: "sealed:v2:" followed by the standard base64 of a
// random 96-bit nonce and the ciphertext with its tag. Each value is bound to
// additional data (aad), such as the KV key of the job it belongs to, and a
// secret of an action also to its field and to where the action sends it
// (its destination), so a value copied to another job or field, or left in
// an action that now points elsewhere, does not open. Values of format v1
// ("sealed:v1:", bound to the job and field only) open only as stored jobs
// (OpenStoredAction), to be sealed again as v2.
//
// One key serves a deployment. It comes from configuration as base64
// (ParseKey); `scheduler dev` keeps a generated one in its data directory
// (LoadOrCreateKeyFile). Nothing here logs, and no error quotes a key, a
// sealed value or a plaintext.
package seal
