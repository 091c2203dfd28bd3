// Package irc holds the ErgoNetwork reconciler: it reads a network, applies its children in order and
// writes what it found to the network's status.
package irc
