// Package seal encrypts secrets at rest with AES-256-GCM, so that SAS tokens,
// Service Bus keys, passwords, client certificates and OAuth secrets never
// sit in the KV bucket or in execution messages in clear.
//
// A sealed value is text: "sealed:v1:" followed by the standard base64 of a
// random 96-bit nonce and the ciphertext with its tag. Each value is bound to
// additional data (aad), such as the KV key of the job it belongs to, so a
// value copied to another job, or another field, does not open.
//
// One key serves a deployment. It comes from configuration as base64
// (ParseKey); `scheduler dev` keeps a generated one in its data directory
// (LoadOrCreateKeyFile). Nothing here logs, and no error quotes a key, a
// sealed value or a plaintext.
package seal
