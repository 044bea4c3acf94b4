package models

// InitDoc describes the parameter initialisation of the built-in layer kinds (the
// defaults of JAX's stax library, which the papers' reference code used).
const InitDoc = "init: stax defaults — weights Glorot normal (truncated to ±2, rescaled to the Glorot variance), biases normal with std 1e-6 (conv) and 1e-2 (dense)"

// LayerKindInfo describes one registered layer kind: its documentation and the
// fields an architecture file may give it.
type LayerKindInfo struct {
	Kind   LayerKind `json:"kind"`
	Doc    string    `json:"doc"`
	Fields []string  `json:"fields"`
}

// LayerKindInfos describes every registered layer kind, in LayerKinds order.
func LayerKindInfos() ([]LayerKindInfo, error) {
	var out []LayerKindInfo
	for _, k := range LayerKinds() {
		l, err := LayerOf(k)
		if err != nil {
			return nil, err
		}
		fields := l.Fields()
		if fields == nil {
			fields = []string{}
		}
		out = append(out, LayerKindInfo{Kind: k, Doc: l.Doc(), Fields: fields})
	}
	return out, nil
}
