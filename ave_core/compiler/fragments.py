"""Index arithmetic on register fragments, shared by the interpreter and the analysis.

A fragment is stored as ``(threads, values)`` in the order of its TV layout; these helpers
compute, once per pair of layouts, which stored element each thread reads when a fragment
is seen through another layout (without any data leaving the thread).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def broadcast_index(src_parent: Any, dst: Any, keep: Sequence[int],
                    shape: Sequence[int]) -> np.ndarray:
    """For a reduced fragment (``ProjectedLayout(src_parent, keep)``) broadcast to a
    fragment distributed by ``dst`` over ``shape``: the flat index (``t * V_src + v``) of
    the stored element each ``(t, v)`` of ``dst`` takes. Shape ``(T, V_dst)``.

    Raises:
        KeyError: a thread would need a reduced element it does not hold (the front end
            rejects such broadcasts, AVE116).
    """
    keep = list(keep)
    tp = np.asarray(src_parent.coords_table())[:, :, keep]
    td = np.asarray(dst.coords_table())[:, :, keep]
    rshape = tuple(shape[a] for a in keep)
    T = tp.shape[0]
    sl = np.ravel_multi_index(tuple(tp[:, :, i] for i in range(len(keep))), rshape)
    dl = np.ravel_multi_index(tuple(td[:, :, i] for i in range(len(keep))), rshape)
    V1, V2 = sl.shape[1], dl.shape[1]
    idx = np.empty((T, V2), np.int64)
    for t in range(T):
        lookup = dict(zip(sl[t].tolist(), range(V1)))
        idx[t] = [t * V1 + lookup[i] for i in dl[t].tolist()]
    return idx
