// Package layering holds no code: its test (TestLayering) enforces the layer order
// of dpfil's packages, which it reads from the "Layers" table of
// docs/architecture.md, so that the drawing and the code cannot disagree. Each
// package sits in one layer; it may import packages of its own layer or of layers
// below, never one drawn above it.
package layering
