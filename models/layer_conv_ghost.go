package models

// Ghost clipping of a conv layer (ghost.go): one sample's weight gradient is
// δ·Aᵀ (Out×CKK), A (CKK×HWo) its patches and δ (Out×HWo) its output gradients.

func (c *convOps[T]) ghostDims() (t, dIn, dOut int) { return c.g.HWo(), c.g.CKK(), c.out.C }

// ghostInLen: the group's patches in the layer's layout, patch-major (g·HWo rows of
// CKK) or column-major (CKK rows of groupLD(g)).
func (c *convOps[T]) ghostInLen(n *Network[T], g int) int {
	if c.patchMajor(n) {
		return g * c.g.HWo() * c.g.CKK()
	}
	return c.g.CKK() * c.groupLD(n, g)
}

// groupLD is the row stride of the column-major patches of a group of g samples,
// padded as colLD pads a chunk's.
func (c *convOps[T]) groupLD(n *Network[T], g int) int {
	ld := g * c.g.HWo()
	if n.patchT && ld%1024 == 0 {
		ld += colPad
	}
	return ld
}

func (c *convOps[T]) ghostBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, row0 int, needIn bool) {
	be := n.be
	pl := n.ghost.plan[i]
	q := n.ghost.q
	dout := ws.dlt[i+1][:cs*c.outN]
	ckk, hwo := c.g.CKK(), c.g.HWo()
	if ws.wino != nil && ws.wino.v[i] != nil { // a per-sample layer run as Winograd
		c.winoBackwardTo(n, ws, i, cs, needIn, func(s int) (gw, gb []T, gsq *float64) {
			row := ws.gh.psg[(row0+s)*q+pl.psOff:]
			return row[:c.nW], row[c.nW : c.nW+c.nB], &ws.gh.gsq[row0+s]
		})
		return
	}
	ld := c.colLD(n, cs)
	pm := c.patchMajor(n)
	for s := 0; s < cs; s++ {
		D := dout[s*c.outN : (s+1)*c.outN]
		row := ws.gh.psg[(row0+s)*q+pl.psOff:]
		var sq float64
		if pl.ghost {
			// Gram block (AᵀA)[p0:p0+bp, p0:p0+w]: rows p of A's transpose are
			// the sample's patches, patch-major rows or column-major columns.
			sq = convGramSqNorm(be, hwo, c.out.C, D, ws.gh.gram, func(p0, bp, w int, dst []T) {
				if pm {
					a := ws.cols[i][(s*hwo+p0)*ckk:]
					be.Gemm(false, true, bp, w, ckk, 1, a, ckk, a, ckk, 0, dst, w)
					return
				}
				a := ws.cols[i][s*hwo+p0:]
				be.Gemm(true, false, bp, w, ckk, 1, a, ld, a, ld, 0, dst, w)
			})
		} else {
			gw := row[:c.nW]
			c.sampleWeightGrad(n, ws, i, s, ld, D, gw)
			sq = be.Dot(gw, gw)
			row = row[c.nW:]
		}
		gb := row[:c.nB]
		rowSums(D, hwo, gb)
		ws.gh.gsq[row0+s] += sq + be.Dot(gb, gb)
	}
	if pl.ghost { // keep the chunk's patches and output gradients for ghostSum
		copy(ws.gh.gD[i][row0*c.outN:], dout)
		gIn := ws.gh.gIn[i]
		if pm {
			copy(gIn[row0*hwo*ckk:], ws.cols[i][:cs*hwo*ckk])
		} else {
			gld := c.groupLD(n, ws.gh.group)
			for k := 0; k < ckk; k++ {
				copy(gIn[k*gld+row0*hwo:k*gld+(row0+cs)*hwo], ws.cols[i][k*ld:k*ld+cs*hwo])
			}
		}
	}
	if needIn {
		c.backwardRows(n, params[c.wOff:c.wOff+c.nW], dout, ws.dlt[i][:cs*c.inN], ws.scratch, ws.scratch2, cs, nil)
	}
}

// ghostSum: Σ_s scale[s]·δ_s·A_sᵀ = [scale[0]·δ_0 … scale[m−1]·δ_{m−1}]·[A_0 … A_{m−1}]ᵀ,
// one GEMM over m·HWo positions with the group's patches.
func (c *convOps[T]) ghostSum(n *Network[T], ws *workspace[T], i, m int, scale, out []T) {
	ckk, hwo, oc := c.g.CKK(), c.g.HWo(), c.out.C
	k := m * hwo
	dsc := ws.gh.dsc[:oc*k]
	D := ws.gh.gD[i]
	for o := 0; o < oc; o++ {
		for s := 0; s < m; s++ {
			src := D[s*c.outN+o*hwo : s*c.outN+(o+1)*hwo]
			dst := dsc[o*k+s*hwo : o*k+(s+1)*hwo]
			f := scale[s]
			for p, v := range src {
				dst[p] = f * v
			}
		}
	}
	if c.patchMajor(n) {
		n.be.Gemm(false, false, oc, ckk, k, 1, dsc, k, ws.gh.gIn[i], ckk, 0, out, ckk)
		return
	}
	n.be.Gemm(false, true, oc, ckk, k, 1, dsc, k, ws.gh.gIn[i], c.groupLD(n, ws.gh.group), 0, out, ckk)
}
