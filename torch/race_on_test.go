//go:build race

package torch

// raceEnabled: the race detector grows RSS by itself (shadow memory), so RSS checks are off.
const raceEnabled = true
