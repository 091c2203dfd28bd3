// Package dockerfile checks the repository's Dockerfiles by parsing them and by building the binary the way
// the image does, because no container engine runs where the tests run.
package dockerfile
