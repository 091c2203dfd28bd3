// Package source fetches one commit of a project's Git repository into a bounded on-disk cache: shallow,
// exactly the commit an Environment names, with only regular files written (no symlinks, no submodules),
// so what the deploy renders is the repository's content at that commit and nothing else. Repositories
// are tenants' and untrusted: hosts are checked on the address connected to, fetches are bounded in
// bytes, objects and time, and a cached commit is served only to the namespace and credentials that
// fetched it.
package source
