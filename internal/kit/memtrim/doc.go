// Package memtrim gives back, once the manager is idle after its start, the pages of the operator's own
// binary that only the start touched (init functions, scheme building, discovery): it asks the kernel
// to page out the executable's read-only mappings, which later use faults back in (docs/performance.md,
// "The idle operator"). Linux only; elsewhere Trim does nothing.
package memtrim
