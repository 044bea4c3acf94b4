package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/internal/registry"
	"github.com/dpfil/dpfil/models"
)

// Layer is what a layer needs to add itself to a Gorgonia graph.
type Layer struct {
	Graph   *G.ExprGraph
	Batch   int
	Index   int // the layer's index in the architecture (for node names)
	Spec    models.LayerSpec
	In, Out models.Shape
	// Param returns the node of the layer's next parameter tensor (in the order of
	// models.Layer.Params) with shape nodeShape, bound to a value the graph's owner
	// fills from the flat parameter vector. transposed says the node holds the
	// transpose of the flat layout's 2-D matrix (the caller transposes when copying
	// values in and out).
	Param func(transposed bool, nodeShape ...int) *G.Node
}

// NodeFunc adds one layer of a kind to a Gorgonia graph: h is the input node,
// (B, C, H, W) or (B, C·H·W) once flattened; it returns the output node.
type NodeFunc func(c *Layer, h *G.Node) (*G.Node, error)

// The Gorgonia nodes of each layer kind, registered by the kind's file node_<kind>.go
// (the engine side of the kind is models/layer_<kind>.go). They live here, not in
// package models, so that the engine and everything that only trains with it
// (train, cmd/dpfil's train) do not link Gorgonia.
var nodes = registry.New[models.LayerKind, NodeFunc]("oracle: Gorgonia nodes of layer kind")

// registerNode adds the Gorgonia nodes of a layer kind (from the kind's init).
func registerNode(kind models.LayerKind, f NodeFunc) { nodes.Register(kind, f) }

// NodeOf returns the Gorgonia nodes of a layer kind.
func NodeOf(kind models.LayerKind) (NodeFunc, error) {
	f, ok := nodes.Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("layer kind %q has no Gorgonia nodes (kinds with nodes: %v)", kind, NodeKinds())
	}
	return f, nil
}

// NodeKinds lists the layer kinds with Gorgonia nodes, sorted. It equals
// models.LayerKinds() (TestNodesForEveryKind).
func NodeKinds() []models.LayerKind { return nodes.Kinds() }
