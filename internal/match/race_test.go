//go:build race

package match

// raceEnabled: the race detector changes what allocations count, so the
// allocation bounds are checked only without it (make test runs so).
const raceEnabled = true
