"""numba gather of the window Grams' blocks (training/window_gram.py; imported only on a CPU).

out[r, a, c] = store[offset[r] + li[r, a] * n[r] + li[r, c]] where c's step is at most a's
(c < (a // b + 1) * b, b the batch size), 0 above: the [T*B, T*B] block of row r's device Gram
at its window's samples, read straight from the Gram's rows, only in the blocks the window
reads (step s's correction reads steps t < s, SAM's ascent t = s; the rest was 45 % of the
gather's time at T = 10, never read). torch's way, two index_selects a row (whole Gram rows,
then their columns), wrote and read back an n_i-wide copy of every row: 0.95 ms a window
against 0.43 ms here (FedLGA-FMNIST, k = 10, T*B = 160).
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def gather_blocks(store, offset, n, li, b, out):
    k, m = li.shape
    for r in range(k):
        for a in range(m):
            row, upto = offset[r] + li[r, a] * n[r], (a // b + 1) * b
            for c in range(upto):
                out[r, a, c] = store[row + li[r, c]]
            for c in range(upto, m):
                out[r, a, c] = 0.0
