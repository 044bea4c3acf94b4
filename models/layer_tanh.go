package models

// KindTanh is the elementwise tanh.
const KindTanh LayerKind = "tanh"

func init() {
	registerLayer(elementwiseLayer{kind: KindTanh, doc: "elementwise tanh", passes: backendAct(ActTanh)})
}
