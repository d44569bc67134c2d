from typing import Any, Callable, Dict, Literal, overload

import numpy as np
import numpy.typing as npt

ORIGINALS: Dict[str, Callable[..., Any]]
REPLACEMENTS: Dict[str, Callable[..., Any]]

def eigh(a: npt.ArrayLike, UPLO: Literal["L", "U"] = "L") -> Any: ...
def eigvalsh(a: npt.ArrayLike, UPLO: Literal["L", "U"] = "L") -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = True,
    compute_uv: Literal[True] = True,
    hermitian: bool = False,
) -> Any: ...
@overload
def svd(
    a: npt.ArrayLike, full_matrices: bool, compute_uv: Literal[False], hermitian: bool = False
) -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = True,
    *,
    compute_uv: Literal[False],
    hermitian: bool = False,
) -> np.ndarray: ...
def svdvals(x: npt.ArrayLike, /) -> np.ndarray: ...
