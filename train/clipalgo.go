package train

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// validateClipAlgo checks clip_algo and refuses ghost and mixed clipping where the
// run needs the per-sample engine or another device.
func (c Config) validateClipAlgo() error {
	algo, err := models.ParseClipAlgo(c.ClipAlgo)
	if err != nil {
		return fmt.Errorf("config: clip_algo: %w", err)
	}
	if algo == models.ClipPerSample {
		return nil
	}
	switch {
	case c.FILEnabled() || c.FILEta > 0 || c.FILLabel:
		return fmt.Errorf("config: clip_algo = %s forms no per-sample gradients, and FIL (fil_coords = %d, fil_exact = %v, fil_eta = %d, fil_label = %v) runs on the per-sample engine: set fil_coords = 0 (and fil_exact, fil_eta, fil_label off) or clip_algo = %s",
			algo, c.FILCoords, c.FILExact, c.FILEta, c.FILLabel, models.ClipAlgoPerSample)
	case c.Device == "cuda":
		return fmt.Errorf("config: clip_algo = %s runs on the CPU engine only; device cuda clips per sample (clip_algo = %s)", algo, models.ClipAlgoPerSample)
	case c.Tuning.On():
		return fmt.Errorf("config: clip_algo = %s: pretraining, pruning, freezing and learned noise clip per sample; use clip_algo = %s", algo, models.ClipAlgoPerSample)
	}
	return nil
}

// applyClipAlgo sets the run's clipping algorithm on its model (Config validated).
func applyClipAlgo(cfg Config, m models.Model) error {
	return applyModelAlgo("clip_algo", cfg.ClipAlgo, models.ParseClipAlgo, models.ClipPerSample, models.ClipAlgoPerSample,
		m, models.ClipAlgoSetter.SetClipAlgo, "has no ghost clipping (the engine's CPU models have it)")
}

// applyModelAlgo parses the config key's value and, unless it is the default def
// (named defName), sets it on m through set, or fails naming what m lacks.
func applyModelAlgo[A comparable, S any](key, value string, parse func(string) (A, error), def A, defName string,
	m models.Model, set func(S, A) error, lacks string) error {
	algo, err := parse(value)
	if err != nil {
		return fmt.Errorf("config: %s: %w", key, err)
	}
	if algo == def {
		return nil
	}
	s, ok := any(m).(S)
	if !ok {
		return fmt.Errorf("%s = %v: model %s %s: use %s = %s", key, algo, m.Arch().Name, lacks, key, defName)
	}
	if err := set(s, algo); err != nil {
		return fmt.Errorf("%s = %v: %w", key, algo, err)
	}
	return nil
}

// validateConvAlgo checks conv_algo and refuses Winograd convolutions where the run
// has no CPU per-sample clipped-gradient pass to run them in.
func (c Config) validateConvAlgo() error {
	algo, err := models.ParseConvAlgo(c.ConvAlgo)
	if err != nil {
		return fmt.Errorf("config: conv_algo: %w", err)
	}
	if algo == models.ConvDirect {
		return nil
	}
	if c.Device == "cuda" {
		return fmt.Errorf("config: conv_algo = %s runs on the CPU engine only; device cuda runs direct convolutions (conv_algo = %s)", algo, models.ConvAlgoDirect)
	}
	return nil
}

// applyConvAlgo sets the run's conv algorithm on its model (Config validated).
func applyConvAlgo(cfg Config, m models.Model) error {
	return applyModelAlgo("conv_algo", cfg.ConvAlgo, models.ParseConvAlgo, models.ConvDirect, models.ConvAlgoDirect,
		m, models.ConvAlgoSetter.SetConvAlgo, "has no Winograd convolutions (the engine's CPU models have them)")
}
