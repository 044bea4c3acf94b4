package models

// Ghost clipping of a dense layer (ghost.go): one sample's weight gradient is the
// outer product δ·aᵀ, whose squared norm is ‖δ‖²·‖a‖².

func (d *denseOps[T]) ghostDims() (t, dIn, dOut int) { return 1, d.inN, d.outN }

func (d *denseOps[T]) ghostInLen(_ *Network[T], g int) int { return g * d.inN }

func (d *denseOps[T]) ghostBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, row0 int, needIn bool) {
	be := n.be
	pl := n.ghost.plan[i]
	q := n.ghost.q
	dout := ws.dlt[i+1][:cs*d.outN]
	in := ws.acts[i][:cs*d.inN]
	for s := 0; s < cs; s++ {
		D := dout[s*d.outN : (s+1)*d.outN]
		a := in[s*d.inN : (s+1)*d.inN]
		row := ws.gh.psg[(row0+s)*q+pl.psOff:]
		dd := be.Dot(D, D)
		var sq float64
		if pl.ghost {
			sq = dd * be.Dot(a, a)
		} else {
			gw := row[:d.nW]
			be.Gemm(false, false, d.outN, d.inN, 1, 1, D, 1, a, d.inN, 0, gw, d.inN)
			sq = be.Dot(gw, gw)
			row = row[d.nW:]
		}
		copy(row[:d.nB], D)
		ws.gh.gsq[row0+s] += sq + dd
	}
	if pl.ghost { // keep the chunk's inputs and output gradients for ghostSum
		copy(ws.gh.gIn[i][row0*d.inN:], in)
		copy(ws.gh.gD[i][row0*d.outN:], dout)
	}
	if needIn {
		W := params[d.wOff : d.wOff+d.nW]
		be.Gemm(false, false, cs, d.inN, d.outN, 1, dout, d.outN, W, d.inN, 0, ws.dlt[i][:cs*d.inN], d.inN)
	}
}

// ghostSum: Σ_s scale[s]·δ_s·a_sᵀ = (diag(scale)·Δ)ᵀ·A, Δ (m×Out) and A (m×In) the
// group's output gradients and inputs.
func (d *denseOps[T]) ghostSum(n *Network[T], ws *workspace[T], i, m int, scale, out []T) {
	dsc := ws.gh.dsc[:m*d.outN]
	D := ws.gh.gD[i]
	for s := 0; s < m; s++ {
		f := scale[s]
		for o, v := range D[s*d.outN : (s+1)*d.outN] {
			dsc[s*d.outN+o] = f * v
		}
	}
	n.be.Gemm(true, false, d.outN, d.inN, m, 1, dsc, d.outN, ws.gh.gIn[i][:m*d.inN], d.inN, 0, out, d.inN)
}
