package models

import "unsafe"

// The tile transforms of the Winograd convolution (winograd.go), as whole-row
// linear combinations. Each transform is separable: Bᵀ d B, Aᵀ M A, A dY Aᵀ and
// B dV Bᵀ apply a small matrix to the rows of the tile, then to its columns. Both
// stages are written as winoComb calls, y_j = Σ_i c_ji·x_i over long contiguous
// vectors (all tiles of a channel at once), which the float32 engine runs as AVX2
// kernels; only the stride-2 (de)interleaving between pixel rows and tiles is
// scalar Go. TestWinogradConv checks every transform against the direct layer.

// winoCoef is a coefficient matrix of winoComb: up to 4 outputs of 4 inputs, as
// float64 and as 8 float32 copies per coefficient (the AVX2 kernel's broadcast
// operands, v[j·4 + i]).
type winoCoef struct {
	f [4][4]float64
	v [16][8]float32
}

func newWinoCoef(f [4][4]float64) *winoCoef {
	c := &winoCoef{f: f}
	for j := 0; j < 4; j++ {
		for i := 0; i < 4; i++ {
			for k := range c.v[j*4+i] {
				c.v[j*4+i][k] = float32(f[j][i])
			}
		}
	}
	return c
}

// winoKern holds the coefficient matrices of the transforms (from winoMatrices)
// and whether winoComb runs on the AVX2 kernel.
type winoKern struct {
	bt, b, at, a *winoCoef // Bᵀ, B, Aᵀ (2 outputs) and A (2 inputs, x_2 and x_3 unused)
	add2         *winoCoef // y_0 = x_0 + x_1, y_1 = x_2 + x_3
	gt           *winoCoef // Gᵀ (3 outputs, y_3 = 0)
	fast         bool
}

func newWinoKern(fast bool) *winoKern {
	bt, g, at := winoMatrices()
	var gT [4][4]float64
	for i := 0; i < 3; i++ {
		for j := 0; j < 4; j++ {
			gT[i][j] = g[j][i]
		}
	}
	var btT, atM, aM [4][4]float64
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			btT[i][j] = bt[j][i]
		}
	}
	for j := 0; j < 2; j++ {
		atM[j] = at[j]
		for i := 0; i < 4; i++ {
			aM[i][j] = at[j][i]
		}
	}
	add2 := [4][4]float64{{1, 1, 0, 0}, {0, 0, 1, 1}}
	return &winoKern{bt: newWinoCoef(bt), b: newWinoCoef(btT), at: newWinoCoef(atM), a: newWinoCoef(aM),
		add2: newWinoCoef(add2), gt: newWinoCoef(gT), fast: fast}
}

// winoComb sets y_j[k] = Σ_i c_ji·x_i[k] for k < n and the first ny outputs (2 or
// 4). Inputs with a zero coefficient in every output used may be nil.
func winoComb[T Float](k *winoKern, c *winoCoef, x, y [4][]T, n, ny int) {
	done := 0
	if k.fast && n >= 8 {
		if xf, ok := any(x).([4][]float32); ok {
			yf := any(y).([4][]float32)
			var xp, yp [4]*float32
			for i := 0; i < 4; i++ {
				if xf[i] == nil {
					xf[i] = xf[0]
				}
				xp[i] = &xf[i][:n][0]
			}
			for j := 0; j < ny; j++ {
				yp[j] = &yf[j][:n][0]
			}
			done = n &^ 7
			winoCombF32(&c.v, &xp, &yp, done/8, ny)
		}
	}
	if done == n {
		return
	}
	winoCombLoop(func(j, i int) float64 { return c.f[j][i] }, 4, ny, x[:], y[:], done, n)
}

// winoCombLoop is the portable form of the transforms' linear combinations:
// y_j[k] = Σ_i coef(j, i)·x_i[k] for done ≤ k < n, j < ny, i < nx, skipping zero
// coefficients and adding or subtracting for ±1 (the AVX kernels' rounding).
func winoCombLoop[T Float](coef func(j, i int) float64, nx, ny int, x, y [][]T, done, n int) {
	for j := 0; j < ny; j++ {
		yj := y[j][done:n]
		clear(yj)
		for i := 0; i < nx; i++ {
			switch cf := coef(j, i); cf {
			case 0:
			case 1:
				for t, v := range x[i][done:n] {
					yj[t] += v
				}
			case -1:
				for t, v := range x[i][done:n] {
					yj[t] -= v
				}
			default:
				ct := T(cf)
				for t, v := range x[i][done:n] {
					yj[t] += ct * v
				}
			}
		}
	}
}

// winoCombRef is the reference of the amd64 comb kernels (winoCombF32, 4 inputs;
// winoComb6F32, 6) and their portable version off amd64: y[j][k] = Σ_i
// c[j·len(x)+i][0]·x[i][k] in float32, in order of i, for j < ny and k < 8·n8.
func winoCombRef(c [][8]float32, x, y []*float32, n8, ny int) {
	n, nx := 8*n8, len(x)
	xs := make([][]float32, nx)
	for i := range xs {
		xs[i] = unsafe.Slice(x[i], n)
	}
	for j := 0; j < ny; j++ {
		yj := unsafe.Slice(y[j], n)
		for k := range yj {
			s := c[j*nx][0] * xs[0][k]
			for i := 1; i < nx; i++ {
				s += c[j*nx+i][0] * xs[i][k]
			}
			yj[k] = s
		}
	}
}

// winoScratchLen is the scratch winoInput, winoOutput, winoOutGrad,
// winoInputGrad and winoWeightGrad need for geometry g.
func winoScratchLen(g ConvGeom) int {
	th, tw := winoTiles(g)
	return max(40*(th+1)*tw+2*tw+2, 29*winoDWBlock)
}

// winoDWBlock is the number of (output, input) channel pairs winoWeightGrad
// transforms at a time (its planes stay in L1).
const winoDWBlock = 128

// winoWeightGrad writes dw = Gᵀ dU G (out×in×3×3) from dU
// (du[ξ·winoStride(out, in) + o·in + i]), for blocks of channel pairs: the columns
// of dU combined by G (3 of 4 outputs used), then the rows, then the 9 planes
// interleaved into dw.
func winoWeightGrad[T Float](k *winoKern, out, in int, du, dw, scr []T) {
	oi, xs := out*in, winoStride(out, in)
	const nb = winoDWBlock
	var tp [4][4][]T // [a][l]
	var rp [4][4][]T // [kh][kw] (kw = 3 unused)
	for a := 0; a < 4; a++ {
		for l := 0; l < 4; l++ {
			tp[a][l] = scr[(a*4+l)*nb : (a*4+l+1)*nb]
		}
	}
	for r := 0; r < 3; r++ {
		for l := 0; l < 4; l++ {
			rp[r][l] = scr[(16+r*4+l)*nb : (17+r*4+l)*nb]
		}
	}
	for l := 0; l < 4; l++ {
		rp[3][l] = scr[28*nb : 29*nb] // Gᵀ's fourth output, 0, unused
	}
	for k0 := 0; k0 < oi; k0 += nb {
		n := min(nb, oi-k0)
		for a := 0; a < 4; a++ {
			var x [4][]T
			for b := 0; b < 4; b++ {
				x[b] = du[(a*4+b)*xs+k0:][:n]
			}
			winoComb(k, k.gt, x, tp[a], n, 4)
		}
		for l := 0; l < 3; l++ {
			winoComb(k, k.gt, [4][]T{tp[0][l], tp[1][l], tp[2][l], tp[3][l]}, [4][]T{rp[0][l], rp[1][l], rp[2][l], rp[3][l]}, n, 4)
		}
		d := dw[k0*9 : (k0+n)*9]
		for t := 0; t < n; t++ {
			g := d[t*9 : t*9+9]
			g[0], g[1], g[2] = rp[0][0][t], rp[0][1][t], rp[0][2][t]
			g[3], g[4], g[5] = rp[1][0][t], rp[1][1][t], rp[1][2][t]
			g[6], g[7], g[8] = rp[2][0][t], rp[2][1][t], rp[2][2][t]
		}
	}
}

// winoInput writes V = Bᵀ d B of every 4×4 input tile of one sample x (InC×H×W) to
// v[ξ·xs + i·ld + c0 + t] (tile t = ty·tw + tx, xs = winoStride(InC, ld)), reading
// zeros outside the input. Per channel: every padded input row (2·th + 2 of them,
// row rr = ih + PadT) is split into its 4 tile columns E, O, E1, O1 (values
// 2t, 2t+1, 2t+2, 2t+3 of the row), stored by row parity, so that both stages are
// contiguous: the columns combined by Bᵀ, then the rows 2ty…2ty+3 (parities 0, 1
// at ty and ty+1) combined by Bᵀ straight into V.
func winoInput[T Float](k *winoKern, g ConvGeom, x, v []T, ld, c0 int, scr []T) {
	th, tw := winoTiles(g)
	nt, pl := th*tw, 2*(th+1)*tw // plane: [parity][th+1][tw]
	xs := winoStride(g.InC, ld)
	var in, cb [4][]T
	for q := 0; q < 4; q++ {
		in[q] = scr[q*pl : (q+1)*pl]
		cb[q] = scr[(4+q)*pl : (5+q)*pl]
	}
	we := 2*tw + 2
	row := scr[8*pl : 8*pl+we]
	hw := g.H * g.W
	qlo, qhi := max(0, g.PadL), min(we, g.W+g.PadL)
	for ch := 0; ch < g.InC; ch++ {
		xc := x[ch*hw : (ch+1)*hw]
		for rr := 0; rr < 2*th+2; rr++ {
			off := ((rr&1)*(th+1) + rr>>1) * tw
			e, o, e1, o1 := in[0][off:off+tw], in[1][off:off+tw], in[2][off:off+tw], in[3][off:off+tw]
			ih := rr - g.PadT
			if ih < 0 || ih >= g.H || qlo >= qhi {
				clear(e)
				clear(o)
				clear(e1)
				clear(o1)
				continue
			}
			clear(row[:qlo])
			copy(row[qlo:qhi], xc[ih*g.W+qlo-g.PadL:])
			clear(row[qhi:])
			for t := range e {
				r := row[2*t : 2*t+4]
				e[t], o[t], e1[t], o1[t] = r[0], r[1], r[2], r[3]
			}
		}
		winoComb(k, k.bt, in, cb, pl, 4)
		for b := 0; b < 4; b++ {
			c := cb[b]
			xr := [4][]T{c[:nt], c[(th+1)*tw : (th+1)*tw+nt], c[tw : tw+nt], c[(th+2)*tw : (th+2)*tw+nt]}
			var y [4][]T
			for a := 0; a < 4; a++ {
				y[a] = v[(a*4+b)*xs+ch*ld+c0:][:nt]
			}
			winoComb(k, k.bt, xr, y, nt, 4)
		}
	}
}

// winoOutput writes Y = Aᵀ M A of every tile of one sample to y (out×OutH×OutW),
// cropping partial tiles, from m[ξ·winoStride(out, ld) + o·ld + c0 + t]: per
// channel the rows of every tile combined by Aᵀ, then the columns, then the 2×2
// results interleaved into the output rows.
func winoOutput[T Float](k *winoKern, g ConvGeom, out int, m []T, ld, c0 int, y []T, scr []T) {
	th, tw := winoTiles(g)
	nt, hwo := th*tw, g.HWo()
	xs := winoStride(out, ld)
	var s [2][4][]T
	var ye [2][4][]T // even, odd output columns of output row a of each tile (2 used)
	for a := 0; a < 2; a++ {
		for b := 0; b < 4; b++ {
			s[a][b] = scr[(a*4+b)*nt : (a*4+b+1)*nt]
		}
		ye[a][0] = scr[(8+2*a)*nt : (9+2*a)*nt]
		ye[a][1] = scr[(9+2*a)*nt : (10+2*a)*nt]
	}
	for o := 0; o < out; o++ {
		for b := 0; b < 4; b++ {
			var x [4][]T
			for a := 0; a < 4; a++ {
				x[a] = m[(a*4+b)*xs+o*ld+c0:][:nt]
			}
			winoComb(k, k.at, x, [4][]T{s[0][b], s[1][b]}, nt, 2)
		}
		for a := 0; a < 2; a++ {
			winoComb(k, k.at, s[a], ye[a], nt, 2)
		}
		yo := y[o*hwo : (o+1)*hwo]
		for ty := 0; ty < th; ty++ {
			for a := 0; a < 2; a++ {
				oh := 2*ty + a
				if oh >= g.OutH {
					break
				}
				dst := yo[oh*g.OutW : (oh+1)*g.OutW]
				ev, od := ye[a][0][ty*tw:(ty+1)*tw], ye[a][1][ty*tw:(ty+1)*tw]
				n2 := g.OutW / 2
				for tx, v := range ev[:n2] {
					dst[2*tx], dst[2*tx+1] = v, od[tx]
				}
				if g.OutW&1 == 1 {
					dst[2*n2] = ev[n2]
				}
			}
		}
	}
}

// winoOutGrad writes N = A dY Aᵀ of every tile of one sample's output gradient dy
// (out×OutH×OutW; zero where a tile is cropped) to
// nb[ξ·winoStride(out, ld) + o·ld + c0 + t]: per channel the 2×2 tiles split into
// their even and odd columns, the columns combined by A, then the rows, straight
// into N.
func winoOutGrad[T Float](k *winoKern, g ConvGeom, out int, dy, nb []T, ld, c0 int, scr []T) {
	th, tw := winoTiles(g)
	nt, hwo := th*tw, g.HWo()
	xs := winoStride(out, ld)
	var d [2][2][]T // [row a][column parity]
	var p [2][4][]T // [row a][column c of A dY]… after the column stage
	for a := 0; a < 2; a++ {
		for q := 0; q < 2; q++ {
			d[a][q] = scr[(a*2+q)*nt : (a*2+q+1)*nt]
		}
		for c := 0; c < 4; c++ {
			p[a][c] = scr[(4+a*4+c)*nt : (5+a*4+c)*nt]
		}
	}
	n2 := g.OutW / 2
	for o := 0; o < out; o++ {
		do := dy[o*hwo : (o+1)*hwo]
		for ty := 0; ty < th; ty++ {
			for a := 0; a < 2; a++ {
				ev, od := d[a][0][ty*tw:(ty+1)*tw], d[a][1][ty*tw:(ty+1)*tw]
				oh := 2*ty + a
				if oh >= g.OutH {
					clear(ev)
					clear(od)
					continue
				}
				src := do[oh*g.OutW : (oh+1)*g.OutW]
				for tx := range ev[:n2] {
					ev[tx], od[tx] = src[2*tx], src[2*tx+1]
				}
				if g.OutW&1 == 1 {
					ev[n2], od[n2] = src[2*n2], 0
				}
			}
		}
		for a := 0; a < 2; a++ {
			winoComb(k, k.a, [4][]T{d[a][0], d[a][1]}, p[a], nt, 4)
		}
		for c := 0; c < 4; c++ {
			var y [4][]T
			for r := 0; r < 4; r++ {
				y[r] = nb[(r*4+c)*xs+o*ld+c0:][:nt]
			}
			winoComb(k, k.a, [4][]T{p[0][c], p[1][c]}, y, nt, 4)
		}
	}
}

// winoInputGrad writes to dx (InC×H×W) the sum over the tiles of one sample of
// dd = B dV Bᵀ, from dv[ξ·winoStride(InC, ld) + i·ld + c0 + t], dropping values in
// the padding: per channel the rows combined by B, then the columns; then the
// overlapping tile rows added (tile row ty's rows 2, 3 onto ty+1's rows 0, 1), and
// the overlapping columns added while they are interleaved into dx. The tiles
// cover every input pixel, so dx is written, not added to.
func winoInputGrad[T Float](k *winoKern, g ConvGeom, dv []T, ld, c0 int, dx, scr []T) {
	th, tw := winoTiles(g)
	nt := th * tw
	xs := winoStride(g.InC, ld)
	var wr, qr [4][4][]T // [r][b] and [r][c]
	for r := 0; r < 4; r++ {
		for b := 0; b < 4; b++ {
			wr[r][b] = scr[(r*4+b)*nt : (r*4+b+1)*nt]
			qr[r][b] = scr[(16+r*4+b)*nt : (17+r*4+b)*nt]
		}
	}
	// z[par][c]: row parity par of the padded input rows (th+1 tile rows of tw)
	zl := (th + 1) * tw
	var z [2][4][]T
	for par := 0; par < 2; par++ {
		for c := 0; c < 4; c++ {
			z[par][c] = scr[32*nt+(par*4+c)*zl : 32*nt+(par*4+c+1)*zl]
		}
	}
	hw := g.H * g.W
	prow := scr[40*(th+1)*tw : 40*(th+1)*tw+2*tw+2]
	for ch := 0; ch < g.InC; ch++ {
		for b := 0; b < 4; b++ {
			var x [4][]T
			for a := 0; a < 4; a++ {
				x[a] = dv[(a*4+b)*xs+ch*ld+c0:][:nt]
			}
			winoComb(k, k.b, x, [4][]T{wr[0][b], wr[1][b], wr[2][b], wr[3][b]}, nt, 4)
		}
		for r := 0; r < 4; r++ {
			winoComb(k, k.b, wr[r], qr[r], nt, 4)
		}
		// padded row 2s + par receives tile row s's row par and tile row s−1's
		// row par+2
		for c := 0; c < 4; c++ {
			for par := 0; par < 2; par++ {
				zc, lo, hi := z[par][c], qr[par][c], qr[par+2][c]
				copy(zc[:tw], lo[:tw])
				copy(zc[th*tw:], hi[(th-1)*tw:])
			}
			if th > 1 {
				m := (th - 1) * tw
				winoComb(k, k.add2, [4][]T{qr[0][c][tw:], qr[2][c][:m], qr[1][c][tw:], qr[3][c][:m]},
					[4][]T{z[0][c][tw:], z[1][c][tw:]}, m, 2)
			}
		}
		xc := dx[ch*hw : (ch+1)*hw]
		for ih := 0; ih < g.H; ih++ {
			rr := ih + g.PadT
			off, par := (rr>>1)*tw, rr&1
			z0, z1, z2, z3 := z[par][0][off:off+tw], z[par][1][off:off+tw], z[par][2][off:off+tw], z[par][3][off:off+tw]
			// padded column 2t + c receives tile t's column c and tile t−1's c+2
			prow[0], prow[1] = z0[0], z1[0]
			for t := 1; t < tw; t++ {
				prow[2*t], prow[2*t+1] = z0[t]+z2[t-1], z1[t]+z3[t-1]
			}
			prow[2*tw], prow[2*tw+1] = z2[tw-1], z3[tw-1]
			copy(xc[ih*g.W:(ih+1)*g.W], prow[g.PadL:])
		}
	}
}
