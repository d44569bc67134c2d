import os
from contextlib import AbstractContextManager
from typing import Dict, Literal, NamedTuple, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

_Path = Union[str, os.PathLike[str]]
_Subset = Optional[Tuple[int, int]]
_ValueSubset = Optional[Tuple[float, float]]

class EighResult(NamedTuple):
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray

class SVDResult(NamedTuple):
    U: np.ndarray
    S: np.ndarray
    Vh: np.ndarray

def eigh(
    a: npt.ArrayLike,
    b: Optional[npt.ArrayLike] = None,
    *,
    lower: bool = True,
    type: int = 1,
    subset_by_index: _Subset = None,
    subset_by_value: _ValueSubset = None,
    threads: Optional[int] = None,
    trace: Optional[_Path] = None,
) -> EighResult: ...
def eigvalsh(
    a: npt.ArrayLike,
    b: Optional[npt.ArrayLike] = None,
    *,
    lower: bool = True,
    type: int = 1,
    subset_by_index: _Subset = None,
    subset_by_value: _ValueSubset = None,
    threads: Optional[int] = None,
    trace: Optional[_Path] = None,
) -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = False,
    compute_uv: Literal[True] = True,
    *,
    threads: Optional[int] = None,
    trace: Optional[_Path] = None,
) -> SVDResult: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool,
    compute_uv: Literal[False],
    *,
    threads: Optional[int] = None,
    trace: Optional[_Path] = None,
) -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = False,
    *,
    compute_uv: Literal[False],
    threads: Optional[int] = None,
    trace: Optional[_Path] = None,
) -> np.ndarray: ...
def svdvals(
    a: npt.ArrayLike, *, threads: Optional[int] = None, trace: Optional[_Path] = None
) -> np.ndarray: ...
@overload
def batched_svd(
    stack: npt.ArrayLike, *, compute_uv: Literal[True] = True, threads: Optional[int] = None
) -> SVDResult: ...
@overload
def batched_svd(
    stack: npt.ArrayLike, *, compute_uv: Literal[False], threads: Optional[int] = None
) -> np.ndarray: ...

class DelegationError(RuntimeError): ...

class PatchReport:
    served: Dict[str, int]
    delegated: Dict[Tuple[str, str], int]
    @property
    def n_served(self) -> int: ...
    @property
    def n_delegated(self) -> int: ...
    def as_dict(self) -> dict: ...

def patch() -> None: ...
def unpatch() -> None: ...
def is_patched() -> bool: ...
def patched() -> AbstractContextManager[None]: ...
def patch_report() -> PatchReport: ...
