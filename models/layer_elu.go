package models

// KindELU is the elementwise ELU with α = 1: x for x > 0, eˣ − 1 otherwise.
const KindELU LayerKind = "elu"

func init() {
	registerLayer(elementwiseLayer{kind: KindELU, doc: "elementwise ELU with alpha = 1", passes: backendAct(ActELU)})
}
