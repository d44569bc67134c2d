"""A module that binds the functions by name at import, before any patch
(as scikit-learn's KernelPCA binds scipy.linalg.eigh): test_patch imports it
first, then checks that eigenflow.patch() reaches these names."""

from numpy.linalg import eigh as np_eigh  # noqa: F401
from numpy.linalg import svd  # noqa: F401
from scipy.linalg import eigh  # noqa: F401
from scipy.linalg import svdvals as my_svdvals  # noqa: F401


def top_eigenvalue(a):
    """Calls the name bound at import, as a library would."""
    return eigh(a, eigvals_only=True)[-1]
