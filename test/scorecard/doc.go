// Package scorecard runs a bundle's scorecard configuration (bundle/tests/scorecard/config.yaml) the way
// `operator-sdk scorecard` does, with the tests as local processes instead of pods: each test image's
// entry point, built from the same source, runs in a throwaway root that holds the bundle at /bundle, the
// only place those entry points read it from. The tests of this package run the committed bundle's
// configuration in `make test`, and prove that a bundle missing a descriptor fails it.
package scorecard
