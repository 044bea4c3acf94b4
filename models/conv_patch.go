package models

// Patch-major ("transposed") im2col for the CPU's packed float32 GEMM.
//
// The column-major patch matrix of a conv layer (CKK rows × HWo columns per sample,
// samples side by side) makes the per-sample weight gradient D·colᵀ, and the FIL
// term D·ċolᵀ, GEMMs with a transposed B operand, which the packed GEMM must
// transpose into its 16-column panels for every sample (packB16T: 9 % of mnist-cnn's
// FIL step). In the patch-major layout each output position p of a sample holds its
// CKK patch values contiguously (HWo rows × CKK per sample, samples one after the
// other), so those GEMMs read B in place, the forward GEMM reads its large operand
// (the patches) in place as A, and im2col and col2im move runs of KW contiguous
// input values instead of the strided single values of a strided convolution
// (convOps.patchMajor says which layers use it).
//
// Every GEMM computes the same products in the same k order as the column-major
// form (a·b = b·a exactly), and col2imT adds each input pixel's contributions in
// the order Col2im does, so results are bit-identical to it.

// im2colT writes the patch-major patch matrix of one sample x (InC×H×W) to dst
// (HWo rows of CKK values: dst[p·CKK + (c·KH + kh)·KW + kw]).
func im2colT[T Float](g ConvGeom, x, dst []T) {
	ckk, kk, hw := g.CKK(), g.KH*g.KW, g.H*g.W
	p := 0
	for oh := 0; oh < g.OutH; oh++ {
		ih0 := oh*g.Stride - g.PadT
		for ow := 0; ow < g.OutW; ow++ {
			iw0 := ow*g.Stride - g.PadL
			klo, khi := max(0, -iw0), min(g.KW, g.W-iw0)
			row := dst[p*ckk : (p+1)*ckk]
			p++
			if klo == 0 && khi == g.KW && ih0 >= 0 && ih0+g.KH <= g.H && copyPatch(g, x[ih0*g.W+iw0:], row) {
				continue
			}
			for c := 0; c < g.InC; c++ {
				xc := x[c*hw : (c+1)*hw]
				rc := row[c*kk : (c+1)*kk]
				for kh := 0; kh < g.KH; kh++ {
					d := rc[kh*g.KW : (kh+1)*g.KW]
					ih := ih0 + kh
					if ih < 0 || ih >= g.H || klo >= khi {
						clear(d)
						continue
					}
					for t := 0; t < klo; t++ {
						d[t] = 0
					}
					for t := khi; t < len(d); t++ {
						d[t] = 0
					}
					s := xc[ih*g.W+iw0+klo : ih*g.W+iw0+khi]
					d = d[klo:khi]
					for t, v := range s {
						d[t] = v
					}
				}
			}
		}
	}
}

// col2imT adds the patch-major patch gradients src (HWo×CKK) of one sample to dx
// (InC×H×W). Output positions run backwards so that each input pixel receives its
// contributions in increasing (kh, kw), the order of Col2im.
func col2imT[T Float](g ConvGeom, src, dx []T) {
	ckk, kk, hw := g.CKK(), g.KH*g.KW, g.H*g.W
	for oh := g.OutH - 1; oh >= 0; oh-- {
		ih0 := oh*g.Stride - g.PadT
		for ow := g.OutW - 1; ow >= 0; ow-- {
			iw0 := ow*g.Stride - g.PadL
			klo, khi := max(0, -iw0), min(g.KW, g.W-iw0)
			if klo >= khi {
				continue
			}
			p := oh*g.OutW + ow
			row := src[p*ckk : (p+1)*ckk]
			if klo == 0 && khi == g.KW && ih0 >= 0 && ih0+g.KH <= g.H && addPatch(g, row, dx[ih0*g.W+iw0:]) {
				continue
			}
			for c := 0; c < g.InC; c++ {
				xc := dx[c*hw : (c+1)*hw]
				rc := row[c*kk : (c+1)*kk]
				for kh := 0; kh < g.KH; kh++ {
					ih := ih0 + kh
					if ih < 0 || ih >= g.H {
						continue
					}
					s := rc[kh*g.KW+klo : kh*g.KW+khi]
					d := xc[ih*g.W+iw0+klo : ih*g.W+iw0+khi]
					for t, v := range s {
						d[t] += v
					}
				}
			}
		}
	}
}

// transposeRows is the package transposeRows on the AVX kernel when the network
// runs the packed float32 GEMM (patchT; it needs AVX2, so AVX is there). The two
// move the same values: results are bit-identical (TestTransposeRowsF32).
func (n *Network[T]) transposeRows(m, rows, cols int, src, dst []T) {
	if n.patchT {
		transposeRowsF32(m, rows, cols, any(src).([]float32), any(dst).([]float32))
		return
	}
	transposeRows(m, rows, cols, src, dst)
}

// transposeRowsF32 is transposeRows with the 8×8 blocks of every 8-row strip
// transposed by transpose8F32 (AVX); the last cols mod 8 columns and rows mod 8
// rows go through transposeBlock.
func transposeRowsF32(m, rows, cols int, src, dst []float32) {
	n := rows * cols
	r8, c8 := rows&^7, cols&^7
	for r := 0; r < m; r++ {
		s, d := src[r*n:(r+1)*n], dst[r*n:(r+1)*n]
		if c8 > 0 {
			for i0 := 0; i0 < r8; i0 += 8 {
				// reads s[i0·cols … (i0+7)·cols + c8), writes d[j·rows + i0 … +8) for j < c8
				_ = s[(i0+7)*cols+c8-1]
				_ = d[(c8-1)*rows+i0+7]
				transpose8F32(s[i0*cols:], cols, d[i0:], rows, c8/8)
			}
		}
		transposeBlock(s, d, rows, cols, 0, r8, c8, cols)
		transposeBlock(s, d, rows, cols, r8, rows, 0, cols)
	}
}

// transposeBlock sets d[j·rows + i] = s[i·cols + j] for i0 ≤ i < i1, j0 ≤ j < j1.
func transposeBlock[T Float](s, d []T, rows, cols, i0, i1, j0, j1 int) {
	for i := i0; i < i1; i++ {
		for j := j0; j < j1; j++ {
			d[j*rows+i] = s[i*cols+j]
		}
	}
}

// transposeRows writes, for m samples, the transpose of src's sample block (rows×cols,
// row-major, at r·rows·cols) to dst (cols×rows at r·rows·cols), in 8×8 tiles.
func transposeRows[T Float](m, rows, cols int, src, dst []T) {
	const b = 8
	n := rows * cols
	for r := 0; r < m; r++ {
		s, d := src[r*n:(r+1)*n], dst[r*n:(r+1)*n]
		for i0 := 0; i0 < rows; i0 += b {
			i1 := min(i0+b, rows)
			for j0 := 0; j0 < cols; j0 += b {
				j1 := min(j0+b, cols)
				for i := i0; i < i1; i++ {
					sr := s[i*cols : i*cols+j1]
					for j := j0; j < j1; j++ {
						d[j*rows+i] = sr[j]
					}
				}
			}
		}
	}
}

// copyPatch copies an interior patch (every tap inside the input) starting at x
// (channel 0, row ih0, column iw0) to row, for kernel widths 3, 4 and 8 as fixed-size
// copies; it reports false, copying nothing, for other widths.
func copyPatch[T Float](g ConvGeom, x, row []T) bool {
	hw, o := g.H*g.W, 0
	switch g.KW {
	case 3:
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				*(*[3]T)(row[o:]) = *(*[3]T)(x[c*hw+kh*g.W:])
				o += 3
			}
		}
	case 4:
		if xf, ok := any(x).([]float32); ok && hasSSEPatch {
			// bounds: the last run starts at (InC−1)·hw + (KH−1)·W
			_ = xf[(g.InC-1)*hw+(g.KH-1)*g.W+3]
			_ = row[g.InC*g.KH*4-1]
			copyPatch4F32(xf, any(row).([]float32), g.InC, g.KH, hw, g.W)
			return true
		}
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				*(*[4]T)(row[o:]) = *(*[4]T)(x[c*hw+kh*g.W:])
				o += 4
			}
		}
	case 8:
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				*(*[8]T)(row[o:]) = *(*[8]T)(x[c*hw+kh*g.W:])
				o += 8
			}
		}
	default:
		return false
	}
	return true
}

// addPatch is copyPatch's adjoint: it adds row to the interior patch at dx (each
// value once, so the order of col2imT is kept).
func addPatch[T Float](g ConvGeom, row, dx []T) bool {
	hw, o := g.H*g.W, 0
	switch g.KW {
	case 3:
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				d, s := (*[3]T)(dx[c*hw+kh*g.W:]), (*[3]T)(row[o:])
				d[0] += s[0]
				d[1] += s[1]
				d[2] += s[2]
				o += 3
			}
		}
	case 4:
		if df, ok := any(dx).([]float32); ok && hasSSEPatch {
			_ = df[(g.InC-1)*hw+(g.KH-1)*g.W+3]
			_ = row[g.InC*g.KH*4-1]
			addPatch4F32(any(row).([]float32), df, g.InC, g.KH, hw, g.W)
			return true
		}
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				d, s := (*[4]T)(dx[c*hw+kh*g.W:]), (*[4]T)(row[o:])
				d[0] += s[0]
				d[1] += s[1]
				d[2] += s[2]
				d[3] += s[3]
				o += 4
			}
		}
	case 8:
		for c := 0; c < g.InC; c++ {
			for kh := 0; kh < g.KH; kh++ {
				d, s := (*[8]T)(dx[c*hw+kh*g.W:]), (*[8]T)(row[o:])
				for t := range d {
					d[t] += s[t]
				}
				o += 8
			}
		}
	default:
		return false
	}
	return true
}
