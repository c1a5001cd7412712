//go:build race

package worker

// raceEnabled: the race detector makes every stack frame larger.
const raceEnabled = true
