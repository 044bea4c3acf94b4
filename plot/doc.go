// Package plot holds dpfil's drawing primitives, built on gonum/plot and importable
// by any package (it imports no other dpfil package): exact-label decade and
// linear tick markers (DecadeTicks, LinearTicks), the framed inset legend that
// avoids the data (InsetLegend), histograms (Histogram, Guo et al. 2022 Fig. 2),
// log-log scatter plots with y = x (Scatter, Fig. 3), labelled image grids
// (ImageGrid, SaveGrid; Fig. 4 and 6), and writing a figure, or a grid of them
// with aligned data areas (SaveTiles, RenderTiles), at an exact pixel size (PNG) or
// the matching point size (SVG, PDF at 96 px per inch: Render, Save, SavePNG).
//
// The figures that read dpfil's result files (sweep results, a run's dfil.npy, an
// attack sweep) are package plot/figures, which sits above sweep and attack.
package plot
