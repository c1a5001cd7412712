package faults

import "time"

// LogsEnv names a folder where the roles' output is kept after the run
// (by default it is in the test's temporary folder, removed at the end).
const LogsEnv = "SCHEDULER_FAULTS_LOGS"

// Settings shape a system.
type Settings struct {
	// Planners and Workers are how many of each role run. Defaults to 2
	// and 3.
	Planners, Workers int
	// Lease is the planners' --lease. Defaults to 5 s.
	Lease time.Duration
	// ActionTimeout is the planners' --action-timeout. Defaults to 5 s.
	ActionTimeout time.Duration
	// AckWait is the workers' --ack-wait. Defaults to 10 s.
	AckWait time.Duration
	// NoHistory leaves the history role out. Defaults to running it.
	NoHistory bool
	// Hold is how long the sink holds /slow/ calls. Defaults to 2 s.
	Hold time.Duration
}

func (s Settings) withDefaults() Settings {
	if s.Planners == 0 {
		s.Planners = 2
	}
	if s.Workers == 0 {
		s.Workers = 3
	}
	if s.Lease == 0 {
		s.Lease = 5 * time.Second
	}
	if s.ActionTimeout == 0 {
		s.ActionTimeout = 5 * time.Second
	}
	if s.AckWait == 0 {
		s.AckWait = 10 * time.Second
	}
	if s.Hold == 0 {
		s.Hold = 2 * time.Second
	}
	return s
}
