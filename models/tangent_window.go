package models

// Windowed tangent forward (CPU): a one-hot input tangent stays zero outside a small
// window of the first conv layer's output (the positions whose receptive field
// holds the pixel), and of the elementwise layers that follow it up to the next
// parameter layer. Those layers then compute their tangents only inside the window
// and clear the rest: every value is the same (+0 outside: the dense pass computes
// f'(x)·(+0) = +0 and sums of +0), with a fraction of the work. mnist-cnn: the conv1
// output tangent is nonzero on ≤ 4×4 of 14×14 positions, pool1's on ≤ 5×5 of 13×13.

// windowed is an engine layer whose tangent forward can run inside per-row windows.
type windowed[T Float] interface {
	// windowForward is tangentForward for rows whose input tangents are +0 outside
	// ws.win (per row: oh0, oh1, ow0, ow1, the same for every channel); it updates
	// ws.win to the output's windows and reports false, having done nothing, when
	// the layer cannot.
	windowForward(n *Network[T], ws *workspace[T], i int, cs, kc int) bool
}

// sparseWindows sets ws.win, for the rows one-hot input tangents of conv layer c,
// to the bounding box of the output positions the pixel reaches (empty for a zero
// row).
func (c *convOps[T]) sparseWindows(ws *workspace[T], rows int) {
	if cap(ws.win) < 4*rows {
		ws.win = make([]int, 4*rows)
	}
	ws.win = ws.win[:4*rows]
	g := c.g
	for r := 0; r < rows; r++ {
		w := ws.win[4*r : 4*r+4]
		w[0], w[1], w[2], w[3] = g.OutH, 0, g.OutW, 0
		idx := ws.spIdx[r]
		if idx < 0 {
			continue
		}
		forEachTap(g, idx, func(_, pos int) {
			oh, ow := pos/g.OutW, pos%g.OutW
			w[0], w[1] = min(w[0], oh), max(w[1], oh+1)
			w[2], w[3] = min(w[2], ow), max(w[3], ow+1)
		})
	}
}

func (a *actOps[T]) windowForward(n *Network[T], ws *workspace[T], i int, cs, kc int) bool {
	sh := a.in
	hw := sh.H * sh.W
	if len(ws.winD1) < a.inN {
		ws.winD1 = make([]T, a.inN)
	}
	d1 := ws.winD1[:a.inN]
	for s := 0; s < cs; s++ {
		xs, ys := ws.acts[i][s*a.inN:(s+1)*a.inN], ws.acts[i+1][s*a.outN:(s+1)*a.outN]
		for j := range d1 {
			d1[j] = actD1(a.act, xs[j], ys[j]) // as in ActTangent
		}
		for j := 0; j < kc; j++ {
			r := s*kc + j
			tx, ty := ws.tacts[i][r*a.inN:(r+1)*a.inN], ws.tacts[i+1][r*a.outN:(r+1)*a.outN]
			clear(ty)
			w := ws.win[4*r : 4*r+4]
			for c := 0; c < sh.C; c++ {
				for oh := w[0]; oh < w[1]; oh++ {
					o := c*hw + oh*sh.W
					for ow := w[2]; ow < w[3]; ow++ {
						ty[o+ow] = d1[o+ow] * tx[o+ow] // one rounding, as mulVec
					}
				}
			}
		}
	}
	return true
}

func (a *avgPoolOps[T]) windowForward(n *Network[T], ws *workspace[T], i int, cs, kc int) bool {
	g := a.pool
	if g.KH != 2 || g.KW != 2 || g.Stride != 1 {
		return false
	}
	inv := 1 / T(g.KH*g.KW)
	inS, outS := g.H*g.W, g.OutH*g.OutW
	for r := 0; r < cs*kc; r++ {
		x, y := ws.tacts[i][r*a.inN:(r+1)*a.inN], ws.tacts[i+1][r*a.outN:(r+1)*a.outN]
		clear(y)
		w := ws.win[4*r : 4*r+4]
		// outputs whose 2×2 field meets the input window
		oh0, oh1 := max(w[0]-1, 0), min(w[1], g.OutH)
		ow0, ow1 := max(w[2]-1, 0), min(w[3], g.OutW)
		for c := 0; c < g.C; c++ {
			xs, ys := x[c*inS:(c+1)*inS], y[c*outS:(c+1)*outS]
			for oh := oh0; oh < oh1; oh++ {
				x0, x1 := xs[oh*g.W:], xs[(oh+1)*g.W:]
				for ow := ow0; ow < ow1; ow++ {
					// AvgPool's 2×2 stride-1 order: ((x00 + x01) + x10) + x11
					ys[oh*g.OutW+ow] = (x0[ow] + x0[ow+1] + x1[ow] + x1[ow+1]) * inv
				}
			}
		}
		w[0], w[1], w[2], w[3] = oh0, max(oh1, oh0), ow0, max(ow1, ow0)
	}
	return true
}
