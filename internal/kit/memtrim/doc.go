// Package memtrim gives back, once the manager is idle after its start, the pages of the operator's own
// binary that only the start touched (init functions, scheme building, discovery): it unmaps the
// executable's read-only mappings from the process and has the kernel drop their pages from the page
// cache; later use reads them back from the file (docs/performance.md, "The idle operator"). Linux only;
// elsewhere Trim does nothing.
package memtrim
