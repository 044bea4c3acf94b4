package models

import "fmt"

// KindAvgPool is VALID average pooling over a KH×KW window with Stride; it divides
// by the kernel area.
const KindAvgPool LayerKind = "avgpool"

func init() { registerLayer(avgPoolLayer{}) }

type avgPoolLayer struct{ noParams }

func (avgPoolLayer) Kind() LayerKind  { return KindAvgPool }
func (avgPoolLayer) Fields() []string { return []string{"kh", "kw", "stride"} }

func (avgPoolLayer) Doc() string {
	return "VALID average pooling over a kh×kw window with stride (divides by the kernel area)"
}

func (avgPoolLayer) OutShape(l LayerSpec, s Shape) (Shape, error) {
	if err := positive(KindAvgPool, "kernel and stride", l.KH, l.KW, l.Stride); err != nil {
		return Shape{}, err
	}
	if l.KH > s.H || l.KW > s.W {
		return Shape{}, fmt.Errorf("avgpool %dx%d does not fit input %dx%d", l.KH, l.KW, s.H, s.W)
	}
	return Shape{C: s.C, H: (s.H-l.KH)/l.Stride + 1, W: (s.W-l.KW)/l.Stride + 1}, nil
}

func (avgPoolLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 0, false }

func (avgPoolLayer) Describe(l LayerSpec) string {
	return fmt.Sprintf("avgpool %dx%d stride %d", l.KH, l.KW, l.Stride)
}

func (avgPoolLayer) engine(r *resolved) engines {
	p := PoolGeom{C: r.in.C, H: r.in.H, W: r.in.W, KH: r.spec.KH, KW: r.spec.KW, Stride: r.spec.Stride, OutH: r.out.H, OutW: r.out.W}
	return engines{&avgPoolOps[float32]{r, p}, &avgPoolOps[float64]{r, p}}
}

type avgPoolOps[T Float] struct {
	*resolved
	pool PoolGeom
}

func (a *avgPoolOps[T]) forward(n *Network[T], ws *workspace[T], i int, _ []T, cs int) {
	n.be.AvgPool(a.pool, cs, ws.acts[i][:cs*a.inN], ws.acts[i+1][:cs*a.outN])
}

func (a *avgPoolOps[T]) backward(n *Network[T], ws *workspace[T], i int, _ []T, cs int, needIn, _ bool) {
	if needIn {
		din := ws.dlt[i][:cs*a.inN]
		n.zero(din)
		n.be.AvgPoolBack(a.pool, cs, ws.dlt[i+1][:cs*a.outN], din)
	}
}

func (a *avgPoolOps[T]) tangentForward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	rows := cs * kc
	n.be.AvgPool(a.pool, rows, ws.tacts[i][:rows*a.inN], ws.tacts[i+1][:rows*a.outN])
}

func (a *avgPoolOps[T]) tangentBackward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	rows := cs * kc
	tdin := ws.tdlt[i][:rows*a.inN]
	n.zero(tdin)
	n.be.AvgPoolBack(a.pool, rows, ws.tdlt[i+1][:rows*a.outN], tdin)
}
