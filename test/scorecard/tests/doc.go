// Package tests holds platform-operator's own scorecard tests: each reads the bundle (the CSV's
// alm-examples, its descriptors and the owned CRDs) and returns a scorecard v1alpha3 TestStatus, like the
// tests of operator-sdk's scorecard-test image, so cmd/platform-operator-scorecard can run them in a
// scorecard pod and `make test` can run that binary against bundle/.
package tests
