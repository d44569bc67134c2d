from typing import Any, Callable, Dict, Literal, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

ORIGINALS: Dict[str, Callable[..., Any]]
REPLACEMENTS: Dict[str, Callable[..., Any]]

_Driver = Optional[Literal["ev", "evd", "evr", "evx", "gv", "gvd", "gvx"]]
_Index = Optional[Tuple[int, int]]
_Value = Optional[Tuple[float, float]]

def eigh(
    a: npt.ArrayLike,
    b: Optional[npt.ArrayLike] = None,
    *,
    lower: bool = True,
    eigvals_only: bool = False,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: _Index = None,
    subset_by_value: _Value = None,
    driver: _Driver = None,
) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]: ...
def eigvalsh(
    a: npt.ArrayLike,
    b: Optional[npt.ArrayLike] = None,
    *,
    lower: bool = True,
    overwrite_a: bool = False,
    overwrite_b: bool = False,
    type: int = 1,
    check_finite: bool = True,
    subset_by_index: _Index = None,
    subset_by_value: _Value = None,
    driver: _Driver = None,
) -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = True,
    compute_uv: Literal[True] = True,
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: Literal["gesdd", "gesvd"] = "gesdd",
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool,
    compute_uv: Literal[False],
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: Literal["gesdd", "gesvd"] = "gesdd",
) -> np.ndarray: ...
@overload
def svd(
    a: npt.ArrayLike,
    full_matrices: bool = True,
    *,
    compute_uv: Literal[False],
    overwrite_a: bool = False,
    check_finite: bool = True,
    lapack_driver: Literal["gesdd", "gesvd"] = "gesdd",
) -> np.ndarray: ...
def svdvals(
    a: npt.ArrayLike, overwrite_a: bool = False, check_finite: bool = True
) -> np.ndarray: ...
