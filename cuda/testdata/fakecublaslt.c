// A stand-in for libcublasLt, which the real libcublas needs (see fakecublas.c).
int cublasLtFakeOne(void) { return 1; }
