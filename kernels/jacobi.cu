extern "C" __global__ void ef_jacobi_stub(double *x) { x[threadIdx.x] = 0.0; }
