package models

// elementwiseLayer is the Layer of a parameter-free elementwise kind (tanh, ELU,
// ReLU): the shape is kept, a one-hot input tangent does not stay one-hot, the
// description is the kind's name and passes gives the engine passes.
type elementwiseLayer struct {
	noParams
	kind   LayerKind
	doc    string
	passes func(r *resolved) engines
}

func (l elementwiseLayer) Kind() LayerKind                                 { return l.kind }
func (elementwiseLayer) Fields() []string                                  { return nil }
func (l elementwiseLayer) Doc() string                                     { return l.doc }
func (elementwiseLayer) OutShape(_ LayerSpec, s Shape) (Shape, error)      { return s, nil }
func (elementwiseLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 0, false }
func (l elementwiseLayer) Describe(LayerSpec) string                       { return string(l.kind) }
func (l elementwiseLayer) engine(r *resolved) engines                      { return l.passes(r) }

// backendAct returns the engine passes of an activation the backends implement.
func backendAct(act Act) func(r *resolved) engines {
	return func(r *resolved) engines { return actEngines(r, act) }
}

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
