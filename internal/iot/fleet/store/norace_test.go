//go:build !race

package store_test

// raceDetector says the tests run under the race detector (make test), which makes the agents slower.
const raceDetector = false
