package seal

// NewTestSealer is newSealer, for the tests outside the package (those
// that use sealtest, which imports this package).
var NewTestSealer = newSealer
