package cuda

// Test hooks for the external test package (cuda_test), whose tests may import
// packages that import cuda (train, under the dpfil_cuda tag), which a test inside
// package cuda cannot.

// SetChunkBudgetForTest sets the model's chunk budget in float32 values.
func SetChunkBudgetForTest(m *Model, values int) { m.be.budget = values }

// FILOnePassForTest reports whether the model's FIL call of B samples × k directions
// runs in one pass.
func FILOnePassForTest(m *Model, B, k int) bool { return m.net.FILOnePass(B, k) }
