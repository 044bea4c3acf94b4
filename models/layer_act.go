package models

// actOps is the engine part of an elementwise activation that the backends
// implement (Backend.ActForward, ActBackward, ActTangent): tanh and ELU.
type actOps[T Float] struct {
	*resolved
	act Act
}

// actEngines returns the engine passes of a backend activation.
func actEngines(r *resolved, act Act) engines {
	return engines{&actOps[float32]{r, act}, &actOps[float64]{r, act}}
}

func (a *actOps[T]) forward(n *Network[T], ws *workspace[T], i int, _ []T, cs int) {
	n.be.ActForward(a.act, ws.acts[i][:cs*a.inN], ws.acts[i+1][:cs*a.outN])
}

func (a *actOps[T]) backward(n *Network[T], ws *workspace[T], i int, _ []T, cs int, needIn, _ bool) {
	if needIn {
		n.be.ActBackward(a.act, ws.acts[i][:cs*a.inN], ws.acts[i+1][:cs*a.outN], ws.dlt[i+1][:cs*a.outN], ws.dlt[i][:cs*a.inN])
	}
}

func (a *actOps[T]) tangentForward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	rows := cs * kc
	n.be.ActTangent(a.act, cs, kc, a.inN, ws.acts[i], ws.acts[i+1], nil, ws.tacts[i][:rows*a.inN], ws.tacts[i+1][:rows*a.outN], nil, nil)
}

func (a *actOps[T]) tangentBackward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	rows := cs * kc
	n.be.ActTangent(a.act, cs, kc, a.inN, ws.acts[i], ws.acts[i+1], ws.dlt[i+1], ws.tacts[i], nil, ws.tdlt[i+1][:rows*a.outN], ws.tdlt[i][:rows*a.inN])
}
