// Package apply is the one server-side-apply path every controller uses: a stable field owner, forced
// ownership, and no request at all when the live object already holds every field we have an opinion on.
package apply
