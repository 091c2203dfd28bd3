//go:build race

package render

// raceEnabled: the race detector's shadow memory cannot live under RLIMIT_DATA, so a race-instrumented
// child (the tests' binary under -race) is held by its watchdog alone.
const raceEnabled = true
