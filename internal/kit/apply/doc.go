// Package apply is the one server-side-apply path every controller uses: a stable field owner, forced
// ownership, and no request at all when the live object already holds every field we have an opinion on.
// It also owns what the informer cache keeps of an object: Slim cuts a child down to what reconcilers
// read, and Compact (compact.go) makes cached objects share the strings they repeat; the manager installs
// CompactTransform as its cache's default.
package apply
