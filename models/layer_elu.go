package models

import (
	"math/rand/v2"
)

// KindELU is the elementwise ELU with α = 1: x for x > 0, eˣ − 1 otherwise.
const KindELU LayerKind = "elu"

func init() { registerLayer(eluLayer{}) }

type eluLayer struct{}

func (eluLayer) Kind() LayerKind                                               { return KindELU }
func (eluLayer) Fields() []string                                              { return nil }
func (eluLayer) Doc() string                                                   { return "elementwise ELU with alpha = 1" }
func (eluLayer) OutShape(_ LayerSpec, s Shape) (Shape, error)                  { return s, nil }
func (eluLayer) Params(LayerSpec, Shape) []ParamTensor                         { return nil }
func (eluLayer) InitParam(LayerSpec, Shape, int, *rand.Rand, []float64)        {}
func (eluLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool)             { return 0, false }
func (eluLayer) Describe(LayerSpec) string                                     { return "elu" }
func (eluLayer) FLOPs(LayerSpec, Shape, Shape, FLOPContext) (float64, float64) { return 0, 0 }
func (eluLayer) engine(r *resolved) engines                                    { return actEngines(r, ActELU) }
