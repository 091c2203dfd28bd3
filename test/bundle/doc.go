// Package bundle checks the OLM packaging as committed: bundle/ passes every validator of
// operator-framework/api that applies without a container engine, with no error and no warning; the
// ClusterServiceVersion says what the operator really does (install modes, WATCH_NAMESPACE, permissions,
// related images, feature annotations, samples, icon); the file-based catalog under catalog/ serves that
// bundle with an upgrade graph that cannot strand users; catalog.Dockerfile and the scorecard image's
// Dockerfile build what they should.
package bundle
