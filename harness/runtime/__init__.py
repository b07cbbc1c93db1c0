"""How one process uses the machine: a call computed in a second process (`process_call`)
and the cyclic garbage collector paused around a bulk pass (`gc_pause`).

These exist for speed only; the rooms that use them (store, reporting, running) keep them
out of their public types.

What it may import: the vocabulary.
"""
