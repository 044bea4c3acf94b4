package models

import (
	"math/rand/v2"
)

// KindTanh is the elementwise tanh.
const KindTanh LayerKind = "tanh"

func init() { registerLayer(tanhLayer{}) }

type tanhLayer struct{}

func (tanhLayer) Kind() LayerKind                                               { return KindTanh }
func (tanhLayer) Fields() []string                                              { return nil }
func (tanhLayer) Doc() string                                                   { return "elementwise tanh" }
func (tanhLayer) OutShape(_ LayerSpec, s Shape) (Shape, error)                  { return s, nil }
func (tanhLayer) Params(LayerSpec, Shape) []ParamTensor                         { return nil }
func (tanhLayer) InitParam(LayerSpec, Shape, int, *rand.Rand, []float64)        {}
func (tanhLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool)             { return 0, false }
func (tanhLayer) Describe(LayerSpec) string                                     { return "tanh" }
func (tanhLayer) FLOPs(LayerSpec, Shape, Shape, FLOPContext) (float64, float64) { return 0, 0 }
func (tanhLayer) engine(r *resolved) engines                                    { return actEngines(r, ActTanh) }
