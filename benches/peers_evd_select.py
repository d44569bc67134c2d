"""LAPACK peers of benches/evd_select.rs (issue 11): scipy/OpenBLAS dsyevr and dsyevx
for the top 100 eigenpairs and dsyevd values only, at n = 4096, with the GEMM rate
(T_gemm) of the same process. Run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset:
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_evd_select.py`."""
import numpy as np, scipy.linalg as sl, time, scipy
np.random.seed(1); n=4096
a=np.random.standard_normal((n,n)); a=a+a.T
b=np.random.standard_normal((n,n))
def best(f,r=2):
    t=[]
    for _ in range(r):
        s=time.perf_counter(); f(); t.append(time.perf_counter()-s)
    return min(t)
g=best(lambda: a@b, 3); rate=2*n**3/g
print(f"scipy {scipy.__version__}, GEMM {rate/1e9:.1f} GF/s, T_gemm {g:.3f} s")
t1=best(lambda: sl.eigh(a, subset_by_index=[n-100,n-1], driver='evr'),1)
t2=best(lambda: sl.eigh(a, eigvals_only=True, driver='evd'),1)
t3=best(lambda: sl.eigh(a, subset_by_index=[n-100,n-1], driver='evx'),1)
print(f"dsyevr top-100 vectors {t1:.3f} s = {t1/g:.2f} T_gemm; dsyevx top-100 {t3:.3f} s; dsyevd values {t2:.3f} s = {t2/g:.2f} T_gemm")
