package models

import "unsafe"

// Winograd F(m×m, 3×3) for any output tile size m, used for F(4×4, 3×3) in the
// per-sample clipped-gradient pass (winograd.go has the specialised F(2×2, 3×3)
// and the pass's plumbing; this file the tile-size-generic transforms).
//
// F(m, 3) computes m outputs of a 3-tap correlation from an input tile of α = m + 2
// values as y = Aᵀ[(G·g) ⊙ (Bᵀ·d)] with α multiplies instead of 3m. The matrices
// (winoTables) come from the Toom–Cook construction on α − 1 finite points and ∞:
// Bᵀ's rows are the input polynomial evaluated at the points (the correlation's
// transpose of the convolution's interpolation), G's rows the filter polynomial at
// the points scaled by the Lagrange denominators, Aᵀ's columns the powers of the
// points (∞ contributes only to the highest output). For m = 4 this file uses
// Lavin & Gray's points 0, ±1, ±2, ∞:
//
//	     ⎡4  0 −5  0  1  0⎤        ⎡ 1/4    0     0  ⎤
//	     ⎢0 −4 −4  1  1  0⎥        ⎢−1/6  −1/6  −1/6 ⎥        ⎡1 1  1 1  1 0⎤
//	Bᵀ = ⎢0  4 −4 −1  1  0⎥    G = ⎢−1/6   1/6  −1/6 ⎥   Aᵀ = ⎢0 1 −1 2 −2 0⎥
//	     ⎢0 −2 −1  2  1  0⎥        ⎢ 1/24  1/12  1/6 ⎥        ⎢0 1  1 4  4 0⎥
//	     ⎢0  2 −1 −2  1  0⎥        ⎢ 1/24 −1/12  1/6 ⎥        ⎣0 1 −1 8 −8 1⎦
//	     ⎣0  4  0 −5  0  1⎦        ⎣ 0      0     1  ⎦
//
// TestWinogradTables checks both tile sizes against direct correlation. Nested in
// two dimensions, a 4×4 output tile of a 3×3 correlation takes 36 multiplies
// instead of 144 (F(2×2): 16 instead of 36), from a 6×6 input tile: per output
// 2.25 transformed values instead of F(2×2)'s 4. The layer's algorithm is the one
// of winograd.go with α² = 36 GEMMs per pass instead of 16: U = G w Gᵀ (computed in
// float64, rounded once), V = Bᵀ d B, M_ξ = U_ξ·V_ξ, Y = Aᵀ M A; N = A dY Aᵀ,
// dV_ξ = U_ξᵀ·N_ξ, dd = B dV Bᵀ (the exact adjoint); dU_ξ = N_ξ·V_ξᵀ,
// dw = Gᵀ dU G. G's sixths and the larger entries of Bᵀ and Aᵀ (up to 8) make
// F(4×4) round more than F(2×2) or direct (TestWinogradConv, TestWinogradClippedGradSum).

// winoMaxAlpha is the largest tile α = m + 2 the generic transforms support.
const winoMaxAlpha = 6

// winoTables returns Bᵀ (α×α), G (α×3) and Aᵀ (m×α) of F(m, 3) for m = 2 or 4.
func winoTables(m int) (bt, g, at [][]float64) {
	switch m {
	case 2:
		b2, g2, a2 := winoMatrices()
		for i := range b2 {
			bt = append(bt, b2[i][:])
			g = append(g, g2[i][:])
		}
		for i := range a2 {
			at = append(at, a2[i][:])
		}
		return bt, g, at
	case 4:
		bt = [][]float64{
			{4, 0, -5, 0, 1, 0},
			{0, -4, -4, 1, 1, 0},
			{0, 4, -4, -1, 1, 0},
			{0, -2, -1, 2, 1, 0},
			{0, 2, -1, -2, 1, 0},
			{0, 4, 0, -5, 0, 1},
		}
		g = [][]float64{
			{1.0 / 4, 0, 0},
			{-1.0 / 6, -1.0 / 6, -1.0 / 6},
			{-1.0 / 6, 1.0 / 6, -1.0 / 6},
			{1.0 / 24, 1.0 / 12, 1.0 / 6},
			{1.0 / 24, -1.0 / 12, 1.0 / 6},
			{0, 0, 1},
		}
		at = [][]float64{
			{1, 1, 1, 1, 1, 0},
			{0, 1, -1, 2, -2, 0},
			{0, 1, 1, 4, 4, 0},
			{0, 1, -1, 8, -8, 1},
		}
		return bt, g, at
	}
	panic("winoTables: tile size not 2 or 4")
}

// winoTilesM returns the m×m output tiles of a geometry: th rows of tw.
func winoTilesM(g ConvGeom, m int) (th, tw int) { return (g.OutH + m - 1) / m, (g.OutW + m - 1) / m }

// winoLDM returns the row stride of a layer's transformed matrices for F(m×m, 3×3)
// and cs samples side by side (winoLD for m = 2).
func winoLDM(g ConvGeom, cs, m int) int {
	th, tw := winoTilesM(g, m)
	ld := cs * th * tw
	if ld%1024 == 0 {
		ld += colPad
	}
	return ld
}

// winoLDV returns the row stride of a layer's transformed inputs V for F(m×m, 3×3)
// and cs samples: with 4×4 tiles and one sample, (th+1)·tw (one unused tile row per
// channel, which the GEMMs skip: winoInputN then runs its second stage for a group
// of channels in one call, see winoInput4G), else winoLDM's.
func winoLDV(g ConvGeom, cs, m int) int {
	th, tw := winoTilesM(g, m)
	if m == 4 && cs == 1 && ((th+1)*tw)%1024 != 0 {
		return (th + 1) * tw
	}
	return winoLDM(g, cs, m)
}

// winoAlpha2 is the number of transformed matrices of F(m×m, 3×3), (m + 2)².
func winoAlpha2(m int) int { return (m + 2) * (m + 2) }

// winoCoefN is a coefficient matrix of winoCombN: ny ≤ 6 outputs of nx ≤ 6 inputs,
// f[j][i], and as 8 float32 copies per coefficient (the AVX2 kernel's operands,
// v[j·6 + i]; zero for i ≥ nx or j ≥ ny).
type winoCoefN struct {
	nx, ny int
	f      [winoMaxAlpha][winoMaxAlpha]float64
	v      [winoMaxAlpha * winoMaxAlpha][8]float32
	// spec, when not 0, is F(4, 3)'s kernel for this matrix with its common
	// subexpressions (winoSpecBt: winoBt4F32, …), run instead of winoComb6F32.
	spec int
}

// The kernels of winoCoefN.spec (a function value would make the pointer arrays
// passed to them escape).
const (
	winoSpecBt = 1 + iota
	winoSpecB
	winoSpecAt
	winoSpecA
	winoSpecGt
)

// newWinoCoefN returns the coefficients y_j = Σ_i f(j, i)·x_i, j < ny, i < nx.
func newWinoCoefN(ny, nx int, f func(j, i int) float64) *winoCoefN {
	c := &winoCoefN{nx: nx, ny: ny}
	for j := 0; j < ny; j++ {
		for i := 0; i < nx; i++ {
			c.f[j][i] = f(j, i)
			for k := range c.v[j*winoMaxAlpha+i] {
				c.v[j*winoMaxAlpha+i][k] = float32(c.f[j][i])
			}
		}
	}
	return c
}

// winoKernN holds F(m, 3)'s tables and the coefficient matrices of its transforms.
type winoKernN struct {
	m, a  int // tile size m, α = m + 2
	bt, g [][]float64
	at    [][]float64
	ctb   *winoCoefN // Bᵀ: α of α
	cb    *winoCoefN // B: α of α
	cat   *winoCoefN // Aᵀ: m of α
	ca    *winoCoefN // A: α of m
	cgt   *winoCoefN // Gᵀ: 3 of α
	fast  bool       // winoCombN runs the AVX2 kernel on float32
}

func newWinoKernN(m int, fast bool) *winoKernN {
	bt, g, at := winoTables(m)
	a := m + 2
	k := &winoKernN{m: m, a: a, bt: bt, g: g, at: at, fast: fast,
		ctb: newWinoCoefN(a, a, func(j, i int) float64 { return bt[j][i] }),
		cb:  newWinoCoefN(a, a, func(j, i int) float64 { return bt[i][j] }),
		cat: newWinoCoefN(m, a, func(j, i int) float64 { return at[j][i] }),
		ca:  newWinoCoefN(a, m, func(j, i int) float64 { return at[i][j] }),
		cgt: newWinoCoefN(3, a, func(j, i int) float64 { return g[i][j] }),
	}
	if m == 4 {
		k.ctb.spec, k.cb.spec, k.cat.spec, k.ca.spec, k.cgt.spec = winoSpecBt, winoSpecB, winoSpecAt, winoSpecA, winoSpecGt
	}
	return k
}

// winoCombN sets y_j[k] = Σ_{i<c.nx} c.f[j][i]·x_i[k] for k < n and j < c.ny.
func winoCombN[T Float](k *winoKernN, c *winoCoefN, x, y *[winoMaxAlpha][]T, n int) {
	done := 0
	if k.fast && n >= 8 {
		if xf, ok := any(x).(*[winoMaxAlpha][]float32); ok {
			yf := any(y).(*[winoMaxAlpha][]float32)
			var xp, yp [winoMaxAlpha]*float32
			for i := 0; i < winoMaxAlpha; i++ {
				if i < c.nx {
					xp[i] = &xf[i][:n][0]
				} else {
					xp[i] = xp[0] // zero coefficients
				}
			}
			for j := 0; j < c.ny; j++ {
				yp[j] = &yf[j][:n][0]
			}
			done = n &^ 7
			switch c.spec {
			case winoSpecBt:
				winoBt4F32(&xp, &yp, done/8)
			case winoSpecB:
				winoB4F32(&xp, &yp, done/8)
			case winoSpecAt:
				winoAt4F32(&xp, &yp, done/8)
			case winoSpecA:
				winoA4F32(&xp, &yp, done/8)
			case winoSpecGt:
				winoGt4F32(&xp, &yp, done/8)
			default:
				winoComb6F32(&c.v, &xp, &yp, done/8, c.ny)
			}
		}
	}
	if done == n {
		return
	}
	winoCombLoop(func(j, i int) float64 { return c.f[j][i] }, c.nx, c.ny, x[:], y[:], done, n)
}

// winoGroupLen is the vector length the F(m×m, 3×3) output, output-gradient and
// input-gradient transforms aim for when one sample's channels lie side by side
// in the transformed matrices (ld = tiles, one sample per chunk): channels are then
// combined in groups (winoGroup), one kernel call per group instead of per channel.
const winoGroupLen = 512

// winoGroup returns the channels per transform call for c channels of nt tiles
// and row stride ld.
func winoGroup(c, nt, ld int) int {
	if ld != nt {
		return 1
	}
	return max(1, min(c, winoGroupLen/nt))
}

// winoScratchLenM is the scratch the F(m×m) transforms need for geometry g.
func winoScratchLenM(g ConvGeom, m int) int {
	th, tw := winoTilesM(g, m)
	a, nt, pl := m+2, th*tw, m*(th+1)*tw
	we, gl := m*(tw+1)+2, max(nt, winoGroupLen)
	in := 2*a*pl + m*(th+1)*we
	if m == 4 { // winoInput4G: groups of up to max(1, winoGroupLen/cl) channels
		cl := (th + 1) * tw
		G := max(1, winoGroupLen/cl)
		in = max(in, 12*4*G*cl+G*4*(th+1)*we)
	}
	out := (m*a + m*m) * gl
	ig := 2*a*a*gl + m*a*(th+1)*tw + m*(th+1)*we
	return max(in, out, ig, (3*a+9)*winoDWBlock)
}

// winoWeightsN writes U_ξ[o][i] = (G w_{o,i} Gᵀ)[ξ] (ξ = a·α + b) to
// u[ξ·winoStride(out, in) + o·in + i] from the weights w (out×in×3×3), in float64.
func winoWeightsN[T Float](k *winoKernN, out, in int, w, u []T) {
	oi, xs, a := out*in, winoStride(out, in), k.a
	var t [winoMaxAlpha][3]float64
	for p := 0; p < oi; p++ {
		f := w[p*9 : p*9+9]
		for r := 0; r < a; r++ { // t = G·f (α×3)
			for j := 0; j < 3; j++ {
				t[r][j] = k.g[r][0]*float64(f[j]) + k.g[r][1]*float64(f[3+j]) + k.g[r][2]*float64(f[6+j])
			}
		}
		for r := 0; r < a; r++ { // U = t·Gᵀ (α×α)
			for c := 0; c < a; c++ {
				u[(r*a+c)*xs+p] = T(t[r][0]*k.g[c][0] + t[r][1]*k.g[c][1] + t[r][2]*k.g[c][2])
			}
		}
	}
}

// winoInputN writes V = Bᵀ d B of every α×α input tile of one sample x (InC×H×W)
// to v[ξ·xs + i·ld + c0 + t] (tile t = ty·tw + tx, xs = winoStride(InC, ld)),
// reading zeros outside the input. Per channel every padded input row rr (row
// ih = rr − PadT) is split into its α tile columns (values m·t + j of the row),
// stored by rr mod m, so that both stages are contiguous: the columns combined by
// Bᵀ, then the rows m·ty + i (i < α: residue i mod m at tile row ty + i/m)
// combined by Bᵀ straight into V.
func winoInputN[T Float](k *winoKernN, g ConvGeom, x, v []T, ld, c0 int, scr []T) {
	m, a := k.m, k.a
	th, tw := winoTilesM(g, m)
	if m == 4 && c0 == 0 && ld == (th+1)*tw {
		winoInput4G(k, g, x, v, ld, scr)
		return
	}
	nt, pl := th*tw, m*(th+1)*tw // plane: [rr mod m][th+1][tw]
	xs := winoStride(g.InC, ld)
	var in, cb [winoMaxAlpha][]T
	for q := 0; q < a; q++ {
		in[q] = scr[q*pl : (q+1)*pl]
		cb[q] = scr[(a+q)*pl : (a+q+1)*pl]
	}
	we := m*(tw+1) + 2
	row := scr[2*a*pl : 2*a*pl+we]
	hw := g.H * g.W
	qlo, qhi := max(0, g.PadL), min(we, g.W+g.PadL)
	var pp []T // m = 4: the padded channel, 4(th+1) rows of we
	if m == 4 {
		pp = scr[2*a*pl : 2*a*pl+4*(th+1)*we]
		clear(pp)
	}
	for ch := 0; ch < g.InC; ch++ {
		xc := x[ch*hw : (ch+1)*hw]
		if m == 4 {
			// rows rr ≡ q (mod 4) of the padded channel split into the 6 tile columns
			// at plane rows q·(th+1) + rr/4, all rows of a residue in one call
			if qlo < qhi {
				for ih := 0; ih < g.H && ih+g.PadT < 4*(th+1); ih++ {
					copy(pp[(ih+g.PadT)*we+qlo:(ih+g.PadT)*we+qhi], xc[ih*g.W+qlo-g.PadL:])
				}
			}
			for q := 0; q < 4; q++ {
				var d [6][]T
				for j := range d {
					d[j] = in[j][q*(th+1)*tw:]
				}
				winoDeintRows(k.fast, pp[q*we:], 4*we, &d, 6, tw, th+1, tw)
			}
		}
		for rr := 0; m != 4 && rr < m*(th+1); rr++ {
			off := ((rr%m)*(th+1) + rr/m) * tw
			ih := rr - g.PadT
			if ih < 0 || ih >= g.H || qlo >= qhi {
				for j := 0; j < a; j++ {
					clear(in[j][off : off+tw])
				}
				continue
			}
			clear(row[:qlo])
			copy(row[qlo:qhi], xc[ih*g.W+qlo-g.PadL:])
			clear(row[qhi:])
			for j := 0; j < a; j++ {
				ij := in[j][off : off+tw]
				for t := range ij {
					ij[t] = row[m*t+j]
				}
			}
		}
		winoCombN(k, k.ctb, &in, &cb, pl)
		for b := 0; b < a; b++ {
			c := cb[b]
			var xr, y [winoMaxAlpha][]T
			for i := 0; i < a; i++ {
				o := ((i%m)*(th+1) + i/m) * tw
				xr[i] = c[o : o+nt]
				y[i] = v[(i*a+b)*xs+ch*ld+c0:][:nt]
			}
			winoCombN(k, k.ctb, &xr, &y, nt)
		}
	}
}

// winoCarve cuts the rows×cols planes of n values at the start of scr (row-major)
// into g[r][c] = scr[(r·cols+c)·n:][:n]: the scratch layout of the kernels below,
// once per call, outside their loops.
func winoCarve[T Float](scr []T, rows, cols, n int) (g [winoMaxAlpha][winoMaxAlpha][]T) {
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			o := (r*cols + c) * n
			g[r][c] = scr[o : o+n]
		}
	}
	return g
}

// winoOutputN writes Y = Aᵀ M A of every tile of one sample to y (out×OutH×OutW),
// cropping partial tiles, from m[ξ·winoStride(out, ld) + o·ld + c0 + t]: per group
// of channels (winoGroup) the rows of every tile combined by Aᵀ, then the columns,
// then the m×m results interleaved into the output rows.
func winoOutputN[T Float](k *winoKernN, g ConvGeom, out int, mm []T, ld, c0 int, y []T, scr []T) {
	m, a := k.m, k.a
	th, tw := winoTilesM(g, m)
	nt, hwo := th*tw, g.HWo()
	xs := winoStride(out, ld)
	G := winoGroup(out, nt, ld)
	L0 := G * nt
	s := winoCarve(scr, m, a, L0)           // [r][b], r < m
	ye := winoCarve(scr[m*a*L0:], m, m, L0) // [r][c] output row r, column c of each tile
	nfull := g.OutW / m
	// with 4×4 tiles and OutH = 4·th, the tile rows of consecutive channels are
	// consecutive output rows 4 apart: one interleaving call per tile row r
	merged := m == 4 && g.OutH%4 == 0
	for o0 := 0; o0 < out; o0 += G {
		gn := min(G, out-o0)
		L := gn * nt
		for b := 0; b < a; b++ {
			var x, yr [winoMaxAlpha][]T
			for i := 0; i < a; i++ {
				x[i] = mm[(i*a+b)*xs+o0*ld+c0:][:L]
			}
			for r := 0; r < m; r++ {
				yr[r] = s[r][b]
			}
			winoCombN(k, k.cat, &x, &yr, L)
		}
		for r := 0; r < m; r++ {
			winoCombN(k, k.cat, &s[r], &ye[r], L)
		}
		if merged {
			for r := 0; r < 4; r++ {
				var e [6][]T
				for c := range 4 {
					e[c] = ye[r][c]
				}
				winoIntRows(k.fast, &e, 4, tw, y[o0*hwo+r*g.OutW:], 4*g.OutW, gn*th, nfull)
			}
			if nfull == tw {
				continue
			}
		}
		for o := o0; o < o0+gn; o++ {
			yo, off := y[o*hwo:(o+1)*hwo], (o-o0)*nt
			if m == 4 && !merged {
				for r := 0; r < min(4, g.OutH); r++ {
					var e [6][]T
					for c := range 4 {
						e[c] = ye[r][c][off:]
					}
					winoIntRows(k.fast, &e, 4, tw, yo[r*g.OutW:], 4*g.OutW, (g.OutH-r+3)/4, nfull)
				}
			}
			for ty := 0; ty < th; ty++ {
				for r := 0; r < m; r++ {
					oh := m*ty + r
					if oh >= g.OutH {
						break
					}
					dst := yo[oh*g.OutW : (oh+1)*g.OutW]
					if m != 4 {
						for c := 0; c < m; c++ {
							ec := ye[r][c][off+ty*tw:]
							for tx := 0; tx < nfull; tx++ {
								dst[m*tx+c] = ec[tx]
							}
						}
					}
					for c := 0; m*nfull+c < g.OutW; c++ {
						dst[m*nfull+c] = ye[r][c][off+ty*tw+nfull]
					}
				}
			}
		}
	}
}

// winoOutGradN writes N = A dY Aᵀ of every tile of one sample's output gradient dy
// (out×OutH×OutW; zero where a tile is cropped) to nb[ξ·winoStride(out, ld) +
// o·ld + c0 + t]: per group of channels (winoGroup) the m×m tiles split into their
// m columns, the columns combined by A, then the rows, straight into N.
func winoOutGradN[T Float](k *winoKernN, g ConvGeom, out int, dy, nb []T, ld, c0 int, scr []T) {
	m, a := k.m, k.a
	th, tw := winoTilesM(g, m)
	nt, hwo := th*tw, g.HWo()
	xs := winoStride(out, ld)
	G := winoGroup(out, nt, ld)
	L0 := G * nt
	d := winoCarve(scr, m, m, L0)          // [row r][column c]
	p := winoCarve(scr[m*m*L0:], m, a, L0) // [row r][column b of dY A]
	nfull := g.OutW / m
	merged := m == 4 && g.OutH%4 == 0 // as in winoOutputN
	for o0 := 0; o0 < out; o0 += G {
		gn := min(G, out-o0)
		L := gn * nt
		if merged {
			for r := 0; r < 4; r++ {
				var e [6][]T
				for c := range 4 {
					e[c] = d[r][c]
				}
				winoDeintRows(k.fast, dy[o0*hwo+r*g.OutW:], 4*g.OutW, &e, 4, tw, gn*th, nfull)
			}
		}
		for o := o0; o < o0+gn && !(merged && nfull == tw); o++ {
			do, off := dy[o*hwo:(o+1)*hwo], (o-o0)*nt
			if m == 4 && !merged {
				for r := 0; r < min(4, g.OutH); r++ {
					var e [6][]T
					for c := range 4 {
						e[c] = d[r][c][off:]
					}
					winoDeintRows(k.fast, do[r*g.OutW:], 4*g.OutW, &e, 4, tw, (g.OutH-r+3)/4, nfull)
				}
			}
			for ty := 0; ty < th; ty++ {
				for r := 0; r < m; r++ {
					oh, row := m*ty+r, off+ty*tw
					if oh >= g.OutH {
						for c := 0; c < m; c++ {
							clear(d[r][c][row : row+tw])
						}
						continue
					}
					src := do[oh*g.OutW : (oh+1)*g.OutW]
					if m != 4 {
						for c := 0; c < m; c++ {
							ec := d[r][c][row:]
							for tx := 0; tx < nfull; tx++ {
								ec[tx] = src[m*tx+c]
							}
						}
					}
					if nfull < tw {
						for c := 0; c < m; c++ {
							var v T
							if m*nfull+c < g.OutW {
								v = src[m*nfull+c]
							}
							d[r][c][row+nfull] = v
						}
					}
				}
			}
		}
		for r := 0; r < m; r++ {
			winoCombN(k, k.ca, &d[r], &p[r], L)
		}
		for b := 0; b < a; b++ {
			var x, y [winoMaxAlpha][]T
			for r := 0; r < m; r++ {
				x[r] = p[r][b]
			}
			for i := 0; i < a; i++ {
				y[i] = nb[(i*a+b)*xs+o0*ld+c0:][:L]
			}
			winoCombN(k, k.ca, &x, &y, L)
		}
	}
}

// winoInputGradN writes to dx (InC×H×W) the sum over the tiles of one sample of
// dd = B dV Bᵀ, from dv[ξ·winoStride(InC, ld) + i·ld + c0 + t], dropping values in
// the padding: per group of channels (winoGroup) the rows combined by B, then the
// columns; then per channel the overlapping tile rows added (tile row ty's rows m,
// m+1 onto ty+1's rows 0, 1), and the overlapping columns added while they are
// interleaved into dx. The tiles cover every input pixel, so dx is written, not
// added to.
func winoInputGradN[T Float](k *winoKernN, g ConvGeom, dv []T, ld, c0 int, dx, scr []T) {
	m, a := k.m, k.a
	th, tw := winoTilesM(g, m)
	nt := th * tw
	xs := winoStride(g.InC, ld)
	G := winoGroup(g.InC, nt, ld)
	L0 := G * nt
	wr, qr := winoCarve(scr, a, a, L0), winoCarve(scr[a*a*L0:], a, a, L0) // [a][j] and [i][j]
	// z[q][j]: padded rows rr ≡ q (mod m), th+1 tile rows of tw, tile column j
	zl, z0 := (th+1)*tw, 2*a*a*L0
	z := winoCarve(scr[z0:], m, a, zl)
	hw := g.H * g.W
	pr := z0 + m*a*zl
	prow := scr[pr : pr+m*(tw+1)+2]
	for ch0 := 0; ch0 < g.InC; ch0 += G {
		gn := min(G, g.InC-ch0)
		L := gn * nt
		for i := 0; i < a; i++ {
			var x [winoMaxAlpha][]T
			for b := 0; b < a; b++ {
				x[b] = dv[(i*a+b)*xs+ch0*ld+c0:][:L]
			}
			winoCombN(k, k.cb, &x, &wr[i], L)
		}
		for j := 0; j < a; j++ {
			var x, y [winoMaxAlpha][]T
			for i := 0; i < a; i++ {
				x[i], y[i] = wr[i][j], qr[i][j]
			}
			winoCombN(k, k.cb, &x, &y, L)
		}
		for ch := ch0; ch < ch0+gn; ch++ {
			off := (ch - ch0) * nt
			xc := dx[ch*hw : (ch+1)*hw]
			if m == 4 {
				// padded row 4s + q receives tile row s's row q and, for q < 2, tile
				// row s−1's row q + 4 (added in place into qr[q], row th from
				// qr[q+4]); the rows of a residue interleaved, the overlapping
				// columns added, into the padded plane pp (4(th+1) rows of 4tw + 2),
				// then cropped into dx
				we := 4*tw + 2
				pp := scr[pr : pr+4*(th+1)*we]
				for q := 0; q < 4; q++ {
					var e [6][]T
					for j := 0; j < a; j++ {
						e[j] = qr[q][j][off : off+nt]
						if q < 2 && th > 1 {
							winoAddVec(k.fast, qr[q+4][j][off:off+nt-tw], e[j][tw:])
						}
					}
					winoIntRows(k.fast, &e, 6, tw, pp[q*we:], 4*we, th, tw)
					if q < 2 {
						for j := 0; j < a; j++ {
							e[j] = qr[q+4][j][off+(th-1)*tw:]
						}
						winoIntRows(k.fast, &e, 6, tw, pp[(4*th+q)*we:], we, 1, tw)
					}
				}
				for ih := 0; ih < g.H; ih++ {
					rr := ih + g.PadT
					copy(xc[ih*g.W:(ih+1)*g.W], pp[rr*we+g.PadL:])
				}
				continue
			}
			// padded row m·s + q receives tile row s's row q and, for q < 2, tile
			// row s−1's row q + m
			for j := 0; j < a; j++ {
				for q := 0; q < m; q++ {
					zc, lo := z[q][j], qr[q][j][off:off+nt]
					copy(zc[:nt], lo)
					if q >= 2 {
						clear(zc[nt:])
						continue
					}
					hi := qr[q+m][j][off : off+nt]
					copy(zc[nt:], hi[(th-1)*tw:])
					zs, hs := zc[tw:nt], hi[:nt-tw]
					for t, v := range hs {
						zs[t] += v
					}
				}
			}
			for ih := 0; ih < g.H; ih++ {
				rr := ih + g.PadT
				off, q := (rr/m)*tw, rr%m
				// padded column m·t + c receives tile t's column c and, for c < 2,
				// tile t−1's column c + m
				for c := 0; c < m; c++ {
					zc := z[q][c][off : off+tw]
					for t, v := range zc {
						prow[m*t+c] = v
					}
				}
				prow[m*tw], prow[m*tw+1] = 0, 0
				for c := 0; c < 2; c++ {
					zc := z[q][c+m][off : off+tw]
					for t, v := range zc {
						prow[m*(t+1)+c] += v
					}
				}
				copy(xc[ih*g.W:(ih+1)*g.W], prow[g.PadL:])
			}
		}
	}
}

// winoWeightGradN writes dw = Gᵀ dU G (out×in×3×3) from dU
// (du[ξ·winoStride(out, in) + o·in + i]), for blocks of channel pairs: the columns
// of dU combined by Gᵀ, then the rows, then the 9 planes interleaved into dw.
func winoWeightGradN[T Float](k *winoKernN, out, in int, du, dw, scr []T) {
	oi, xs, a := out*in, winoStride(out, in), k.a
	const nb = winoDWBlock
	tp := winoCarve(scr, a, 3, nb)          // [a][kw]
	rp := winoCarve(scr[3*a*nb:], 3, 3, nb) // [kw][kh]
	for k0 := 0; k0 < oi; k0 += nb {
		n := min(nb, oi-k0)
		for i := 0; i < a; i++ {
			var x, y [winoMaxAlpha][]T
			for b := 0; b < a; b++ {
				x[b] = du[(i*a+b)*xs+k0:][:n]
			}
			for j := 0; j < 3; j++ {
				y[j] = tp[i][j][:n]
			}
			winoCombN(k, k.cgt, &x, &y, n)
		}
		for j := 0; j < 3; j++ {
			var x, y [winoMaxAlpha][]T
			for i := 0; i < a; i++ {
				x[i] = tp[i][j][:n]
			}
			for r := 0; r < 3; r++ {
				y[r] = rp[j][r][:n]
			}
			winoCombN(k, k.cgt, &x, &y, n)
		}
		d := dw[k0*9 : (k0+n)*9]
		r00, r10, r20 := rp[0][0][:n], rp[1][0][:n], rp[2][0][:n]
		r01, r11, r21 := rp[0][1][:n], rp[1][1][:n], rp[2][1][:n]
		r02, r12, r22 := rp[0][2][:n], rp[1][2][:n], rp[2][2][:n]
		for t := range r00 {
			w := d[t*9 : t*9+9 : t*9+9]
			w[0], w[1], w[2] = r00[t], r10[t], r20[t]
			w[3], w[4], w[5] = r01[t], r11[t], r21[t]
			w[6], w[7], w[8] = r02[t], r12[t], r22[t]
		}
	}
}

// winoNarrow reports whether an F(4×4, 3×3) layer of geometry g has fewer than 32
// tiles per sample. With one sample per chunk its GEMMs M_ξ = U_ξ·V_ξ and
// dV_ξ = U_ξᵀ·N_ξ would have that few columns: a single 16-column panel runs on the
// 4×16 AVX2 kernel (or, below 16, a padded one), so they run transposed instead,
// M_ξᵀ = V_ξᵀ·U_ξᵀ and dV_ξᵀ = N_ξᵀ·U_ξ (tiles as rows, channels as columns: the
// 12×32 AVX-512 kernel), each product transposed back into place (winoTranspose).
func winoNarrow(g ConvGeom) bool {
	th, tw := winoTilesM(g, 4)
	return th*tw < 32
}

// winoPrepareN computes an F(m×m, 3×3) layer's U from params and, for a narrow
// layer (winoNarrow), Uᵀ.
func (c *convOps[T]) winoPrepareN(n *Network[T], i int, params []T) {
	m, oc, in := n.wino.tile[i], c.out.C, c.g.InC
	u := n.wino.u[i]
	winoWeightsN(newWinoKernN(m, false), oc, in, params[c.wOff:c.wOff+c.nW], u)
	if m != 4 || !winoNarrow(c.g) {
		return
	}
	if n.wino.ut == nil {
		n.wino.ut = make([][]T, len(n.layers))
	}
	us := winoStride(oc, in)
	if len(n.wino.ut[i]) != len(u) {
		n.wino.ut[i] = make([]T, len(u))
	}
	for x := 0; x < winoAlpha2(m); x++ {
		winoTranspose(n.wino.avx, u[x*us:], in, n.wino.ut[i][x*us:], oc, oc, in)
	}
}

// winoForwardN is winoForward for an F(m×m, 3×3) layer: V into the workspace
// (kept for backward), α² GEMMs M_ξ = U_ξ·V_ξ, then the output transform.
func (c *convOps[T]) winoForwardN(n *Network[T], ws *workspace[T], i int, in, out []T, cs int) {
	g, oc := c.g, c.out.C
	wb := ws.wino
	k := wb.kn
	ld, ldv := winoLDM(g, cs, k.m), winoLDV(g, cs, k.m)
	th, tw := winoTilesM(g, k.m)
	nt := th * tw
	v, m, u := wb.v[i], wb.m, n.wino.u[i]
	for s := 0; s < cs; s++ {
		winoInputN(k, g, in[s*c.inN:(s+1)*c.inN], v, ldv, s*nt, wb.scr)
	}
	cols := cs * nt
	us, vs, ms := winoStride(oc, g.InC), winoStride(g.InC, ldv), winoStride(oc, ld)
	if k.m == 4 && cs == 1 && winoNarrow(g) {
		ut, t := n.wino.ut[i], wb.narrow(nt*oc)
		for x := 0; x < k.a*k.a; x++ {
			n.be.Gemm(true, false, nt, oc, g.InC, 1, v[x*vs:], ldv, ut[x*us:], oc, 0, t, oc)
			winoTranspose(k.fast, t, oc, m[x*ms:], ld, nt, oc)
		}
	} else {
		for x := 0; x < k.a*k.a; x++ {
			n.be.Gemm(false, false, oc, cols, g.InC, 1, u[x*us:], g.InC, v[x*vs:], ldv, 0, m[x*ms:], ld)
		}
	}
	for s := 0; s < cs; s++ {
		winoOutputN(k, g, oc, m, ld, s*nt, out[s*c.outN:(s+1)*c.outN], wb.scr)
	}
}

// winoBackwardN is winoBackwardTo for an F(m×m, 3×3) layer: per-sample weight
// gradients dw = Gᵀ(N_ξ·V_ξᵀ)G, bias gradients and squared norms as the direct
// path, written where dst says, and, when needIn, the input gradient B(U_ξᵀ·N_ξ)Bᵀ.
func (c *convOps[T]) winoBackwardN(n *Network[T], ws *workspace[T], i int, cs int, needIn bool, dst func(s int) (gw, gb []T, gsq *float64)) {
	be := n.be
	g, oc := c.g, c.out.C
	wb := ws.wino
	k := wb.kn
	a2 := k.a * k.a
	ld, ldv := winoLDM(g, cs, k.m), winoLDV(g, cs, k.m)
	th, tw := winoTilesM(g, k.m)
	nt, hwo := th*tw, g.HWo()
	v, nb, u := wb.v[i], wb.m, n.wino.u[i]
	din, dout := ws.dlt[i][:cs*c.inN], ws.dlt[i+1][:cs*c.outN]
	for s := 0; s < cs; s++ {
		winoOutGradN(k, g, oc, dout[s*c.outN:(s+1)*c.outN], nb, ld, s*nt, wb.scr)
	}
	us, vs, ns := winoStride(oc, g.InC), winoStride(g.InC, ldv), winoStride(oc, ld)
	for s := 0; s < cs; s++ {
		for x := 0; x < a2; x++ {
			be.Gemm(false, true, oc, g.InC, nt, 1, nb[x*ns+s*nt:], ld, v[x*vs+s*nt:], ldv, 0, wb.du[x*us:], g.InC)
		}
		gw, gb, gsq := dst(s)
		winoWeightGradN(k, oc, g.InC, wb.du, gw, wb.scr)
		rowSums(dout[s*c.outN:(s+1)*c.outN], hwo, gb)
		*gsq += be.Dot(gw, gw) + be.Dot(gb, gb)
	}
	if !needIn {
		return
	}
	cols, dvs := cs*nt, winoStride(g.InC, ld)
	if k.m == 4 && cs == 1 && winoNarrow(g) {
		t := wb.narrow(nt * g.InC)
		for x := 0; x < a2; x++ {
			be.Gemm(true, false, nt, g.InC, oc, 1, nb[x*ns:], ld, u[x*us:], g.InC, 0, t, g.InC)
			winoTranspose(k.fast, t, g.InC, wb.dv[x*dvs:], ld, nt, g.InC)
		}
	} else {
		for x := 0; x < a2; x++ {
			be.Gemm(true, false, g.InC, cols, oc, 1, u[x*us:], g.InC, nb[x*ns:], ld, 0, wb.dv[x*dvs:], ld)
		}
	}
	for s := 0; s < cs; s++ {
		winoInputGradN(k, g, wb.dv, ld, s*nt, din[s*c.inN:(s+1)*c.inN], wb.scr)
	}
}

// Costs of the F(4×4, 3×3) part of the cost model (winoCosts4), in direct GEMM
// multiply-adds as winoCosts's constants, fitted by least squares (relative errors)
// to the per-layer measurements of cifar-cnn's six conv layers
// (BenchmarkConvAlgoLayers; docs/perf.md, "Winograd F(4×4, 3×3)"): a multiply-add
// of the 36 small GEMMs per pass costs wino4GemmCost direct ones; the four tile
// transforms cost wino4ChannelCost per channel and transform (calls and plane
// copies) plus wino4TileCost per channel and 4×4 tile; the weight-gradient
// transform wino4DUCost per value of dU (36 per channel pair: four times the
// direct weight gradient's values, written by GEMMs with K = tiles and read back).
const (
	wino4GemmCost    = 1.57
	wino4ChannelCost = 2000
	wino4TileCost    = 450
	wino4DUCost      = 44
)

// winoCosts4 returns the cost model's per-sample cost of a 3×3 stride-1 conv layer
// as Winograd F(4×4, 3×3) in the per-sample clipped-gradient pass, in GEMM
// multiply-adds (winoCosts gives direct and F(2×2, 3×3)): 36·InC·Out per 4×4 tile
// and GEMM pass at wino4GemmCost each (narrow layers' transposed GEMMs,
// winoNarrow, included), the four tile transforms and the weight-gradient
// transform.
func winoCosts4(g ConvGeom, out int, below bool) float64 {
	th, tw := winoTilesM(g, 4)
	tiles := float64(th * tw)
	in, oc := float64(g.InC), float64(out)
	passes, chans := 2.0, in+2*oc
	if below {
		passes, chans = 3, 2*in+2*oc
	}
	gemm := wino4GemmCost * passes * 36 * in * oc * tiles
	return gemm + chans*(wino4ChannelCost+wino4TileCost*tiles) + wino4DUCost*36*in*oc
}

// winoPick returns the output tile a layer with plan p runs under algorithm a: 2
// (F(2×2, 3×3)), 4 (F(4×4, 3×3)) or, under auto where direct is cheapest, 0.
func winoPick(a ConvAlgo, p ConvLayerPlan) int {
	switch a {
	case ConvWinograd:
		return 2
	case ConvWinograd4:
		return 4
	}
	best, tile := p.DirectCost, 0
	if p.WinogradCost < best {
		best, tile = p.WinogradCost, 2
	}
	if p.Winograd4Cost < best {
		tile = 4
	}
	return tile
}

// isF32 reports whether T is float32 (the AVX kernels' element type).
func isF32[T Float]() bool {
	var z T
	return unsafe.Sizeof(z) == 4
}

// f32p returns &x[0] as a *float32 (T float32, len(x) > 0).
func f32p[T Float](x []T) *float32 { return (*float32)(unsafe.Pointer(&x[0])) }

// winoDeintRows splits rows of 4-column tiles into their columns:
// d[j][r·dstride + t] = src[r·sstride + 4t + j] for r < rows, t < n and j < nj (4,
// or 6: columns 4 and 5 of tile t are columns 0 and 1 of tile t + 1, so a source
// row holds 4n + 2 values). On the AVX kernels when fast, T is float32 and n is a
// multiple of 4.
func winoDeintRows[T Float](fast bool, src []T, sstride int, d *[6][]T, nj, dstride, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	slen, dlen := (rows-1)*sstride+4*n+nj-4, (rows-1)*dstride+n
	src = src[:slen]
	if fast && n%4 == 0 && isF32[T]() {
		var dp [6]*float32
		for j := 0; j < nj; j++ {
			dp[j] = f32p(d[j][:dlen])
		}
		if nj == 6 {
			winoDeint6RowsF32(f32p(src), sstride, &dp, dstride, rows, n/4)
		} else {
			winoDeint4RowsF32(f32p(src), sstride, &dp, dstride, rows, n/4)
		}
		return
	}
	for j := 0; j < nj; j++ {
		dj := d[j][:dlen]
		for r := 0; r < rows; r++ {
			dr, sr := dj[r*dstride:r*dstride+n], src[r*sstride+j:]
			for t := range dr {
				dr[t] = sr[4*t]
			}
		}
	}
}

// winoIntRows is winoDeintRows's adjoint: dst[r·dstride + 4t + c] =
// s[c][r·sstride + t] for c < 4; with nj = 6, the destination row's last two values
// (4n, 4n + 1) are zeroed and s[4 + c][r·sstride + t] added at 4t + 4 + c for c < 2.
func winoIntRows[T Float](fast bool, s *[6][]T, nj, sstride int, dst []T, dstride, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	slen, dlen := (rows-1)*sstride+n, (rows-1)*dstride+4*n+nj-4
	dst = dst[:dlen]
	if fast && n%4 == 0 && isF32[T]() {
		var sp [6]*float32
		for j := 0; j < nj; j++ {
			sp[j] = f32p(s[j][:slen])
		}
		if nj == 6 {
			winoInt6RowsF32(&sp, sstride, f32p(dst), dstride, rows, n/4)
		} else {
			winoInt4RowsF32(&sp, sstride, f32p(dst), dstride, rows, n/4)
		}
		return
	}
	for r := 0; r < rows; r++ {
		dr := dst[r*dstride : r*dstride+4*n+nj-4]
		for c := 0; c < 4; c++ {
			sc := s[c][r*sstride : r*sstride+n]
			for t, v := range sc {
				dr[4*t+c] = v
			}
		}
		if nj == 6 {
			dr[4*n], dr[4*n+1] = 0, 0
			for c := 0; c < 2; c++ {
				sc := s[4+c][r*sstride : r*sstride+n]
				for t, v := range sc {
					dr[4*t+4+c] += v
				}
			}
		}
	}
}

// winoAddVec adds x to y (len(y) ≥ len(x)), on the AVX kernel when fast and T is
// float32.
func winoAddVec[T Float](fast bool, x, y []T) {
	if fast && isF32[T]() {
		addF32(unsafe.Slice(f32p(x), len(x)), unsafe.Slice(f32p(y), len(y)))
		return
	}
	for i, v := range x {
		y[i] += v
	}
}

// winoTranspose sets dst[c·dstride + r] = src[r·sstride + c] for r < rows and
// c < cols, on the AVX kernel when fast, T is float32 and both are multiples of 4.
func winoTranspose[T Float](fast bool, src []T, sstride int, dst []T, dstride, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	src, dst = src[:(rows-1)*sstride+cols], dst[:(cols-1)*dstride+rows]
	if fast && rows%4 == 0 && cols%4 == 0 && isF32[T]() {
		winoTransposeF32(f32p(src), sstride, f32p(dst), dstride, rows/4, cols/4)
		return
	}
	for r := 0; r < rows; r++ {
		sr := src[r*sstride : r*sstride+cols]
		for c, v := range sr {
			dst[c*dstride+r] = v
		}
	}
}

// narrow returns the workspace's buffer for one transposed GEMM product of a narrow
// F(4×4) layer (winoNarrow), at least n values.
func (wb *winoBuffers[T]) narrow(n int) []T {
	if len(wb.t) < n {
		wb.t = make([]T, n)
	}
	return wb.t[:n]
}

// winoInput4G is winoInputN for 4×4 tiles, one sample and ld = (th+1)·tw
// (winoLDV), for groups of channels at once: the group's padded channels, 4(th+1)
// rows of we each, lie one after the other in pp, so that the rows ≡ q (mod 4) of
// all of them split into their 6 tile columns in one call (planes [q][channel][s][tx],
// s ≤ th); the columns are combined by Bᵀ in one call; and row i of tile row ty,
// plane q = i mod 4 at s = ty + i/4, is the same flat position shifted by (i/4)·tw
// for every channel, so that the rows are combined by Bᵀ in one call per tile
// column b, straight into V (whose row th of each channel is left with values of
// no tile: the GEMMs read tiles < th·tw only).
func winoInput4G[T Float](k *winoKernN, g ConvGeom, x, v []T, ld int, scr []T) {
	th, tw := winoTilesM(g, 4)
	cl := (th + 1) * tw // one channel's plane rows per residue
	G := max(1, min(g.InC, winoGroupLen/cl))
	we := 4*(tw+1) + 2
	pl := 4 * G * cl
	var in, cb [winoMaxAlpha][]T
	for q := 0; q < 6; q++ {
		in[q] = scr[q*pl : (q+1)*pl]
		cb[q] = scr[(6+q)*pl : (7+q)*pl]
	}
	pp := scr[12*pl : 12*pl+G*4*(th+1)*we]
	clear(pp)
	xs := winoStride(g.InC, ld)
	hw := g.H * g.W
	qlo, qhi := max(0, g.PadL), min(we, g.W+g.PadL)
	for ch0 := 0; ch0 < g.InC; ch0 += G {
		gn := min(G, g.InC-ch0)
		if qlo < qhi {
			for c := 0; c < gn; c++ {
				xc, pc := x[(ch0+c)*hw:(ch0+c+1)*hw], pp[c*4*(th+1)*we:]
				for ih := 0; ih < g.H; ih++ {
					r := ih + g.PadT
					copy(pc[r*we+qlo:r*we+qhi], xc[ih*g.W+qlo-g.PadL:])
				}
			}
		}
		gl := gn * cl
		for q := 0; q < 4; q++ {
			var d [6][]T
			for j := range d {
				d[j] = in[j][q*gl:]
			}
			winoDeintRows(k.fast, pp[q*we:], 4*we, &d, 6, tw, gn*(th+1), tw)
		}
		winoCombN(k, k.ctb, &in, &cb, 4*gl)
		L := gl - tw
		for b := 0; b < 6; b++ {
			var xr, y [winoMaxAlpha][]T
			for i := 0; i < 6; i++ {
				o := (i%4)*gl + (i/4)*tw
				xr[i] = cb[b][o : o+L]
				y[i] = v[(i*6+b)*xs+ch0*ld:][:L]
			}
			winoCombN(k, k.ctb, &xr, &y, L)
		}
	}
}
